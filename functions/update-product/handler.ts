import { validateUpdateProductBody, validateUpdateProductPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { updateProduct } from '#shared/services/update-product.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      credential: 'personal_access_token',
      scopes: ['products:write'],
      path: validateUpdateProductPath,
      body: validateUpdateProductBody,
    },
    async ({ principal, path, body }) => json(200, await updateProduct(deps, principal, path.id, body)),
  );

export const handler = createHandler(productionDependencies());
