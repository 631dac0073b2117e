import { createProductSecurity } from '#shared/generated/security.ts';
import { validateCreateProductBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { createProduct } from '#shared/services/create-product.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-product',
      ...createProductSecurity,
      body: validateCreateProductBody,
    },
    async ({ principal, body }) => json(201, await createProduct(deps, principal, body)),
  );

export const handler = createHandler(productionDependencies());
