import { updateProductSecurity } from '#shared/generated/security.ts';
import { validateUpdateProductBody, validateUpdateProductPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { updateProduct } from '#shared/services/update-product.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateProductSecurity,
      path: validateUpdateProductPath,
      body: validateUpdateProductBody,
    },
    async ({ principal, path, body }) => json(200, await updateProduct(deps, principal, path.id, body)),
  );

export const handler = createHandler(productionDependencies());
