import { createClientSecurity } from '#shared/generated/security.ts';
import { validateCreateClientBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { createClient } from '#shared/services/create-client.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-client',
      // The user's own act: a personal access token (with user:write), never a token delegated to a client.
      oauthAccessTokens: false,
      ...createClientSecurity,
      body: validateCreateClientBody,
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) =>
      json(201, await createClient(deps, principal, body, { baseUrl: issuerOf(deps) }), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
