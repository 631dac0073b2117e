import { validateCreateClientBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { createClient } from '#shared/services/create-client.ts';

/** RFC 7591 registration answers must not be cached: they carry the client secret. */
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      credential: 'personal_access_token',
      idempotencyScope: 'create-client',
      scopes: [],
      body: validateCreateClientBody,
    },
    async ({ principal, body }) => json(201, await createClient(deps, principal, body), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
