import { getClientSecurity } from '#shared/generated/security.ts';
import { validateGetClientPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { getClient } from '#shared/services/client-registration.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getClientSecurity,
      path: validateGetClientPath,
      errorHeaders: NO_STORE,
    },
    async ({ principal }) => json(200, getClient(principal, { baseUrl: issuerOf(deps) }), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
