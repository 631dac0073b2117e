import { baseUrlOf } from '#shared/domain/base-url.ts';
import { getClientSecurity } from '#shared/generated/security.ts';
import { validateGetClientPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getClient } from '#shared/services/client-registration.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getClientSecurity,
      path: validateGetClientPath,
      errorHeaders: NO_STORE,
    },
    async ({ principal, headers }) =>
      json(200, getClient(principal, { baseUrl: baseUrlOf(headers.host) }), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
