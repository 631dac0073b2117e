import { updateClientSecurity } from '#shared/generated/security.ts';
import { validateUpdateClientBody, validateUpdateClientPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { updateClient } from '#shared/services/client-registration.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateClientSecurity,
      path: validateUpdateClientPath,
      body: validateUpdateClientBody,
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) =>
      json(200, await updateClient(deps, principal, body, { baseUrl: issuerOf(deps) }), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
