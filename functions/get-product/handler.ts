import { getProductSecurity } from '#shared/generated/security.ts';
import { validateGetProductPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getProduct } from '#shared/services/get-product.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getProductSecurity,
      path: validateGetProductPath,
    },
    async ({ principal, path }) => json(200, await getProduct(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
