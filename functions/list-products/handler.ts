import { listProductsSecurity } from '#shared/generated/security.ts';
import { listProductsQueryShape, validateListProductsQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listProducts } from '#shared/services/list-products.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listProductsSecurity,
      query: { validate: validateListProductsQuery, shape: listProductsQueryShape },
    },
    async ({ principal, query }) => json(200, await listProducts(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
