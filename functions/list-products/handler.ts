import { listProductsQueryShape, validateListProductsQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listProducts } from '#shared/services/list-products.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      credential: 'personal_access_token',
      scopes: ['products:read', 'products:write'],
      query: { validate: validateListProductsQuery, shape: listProductsQueryShape },
    },
    async ({ principal, query }) => json(200, await listProducts(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
