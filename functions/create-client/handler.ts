import { validateCreateClientBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { createClient } from '#shared/services/create-client.ts';

/**
 * RFC 7591 answers must not be cached: a registration carries the client secret, and its errors
 * (§3.2.2) and the credential refusals are as private (RFC 6749 §5.1, RFC 6750 §3).
 */
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      credential: 'personal_access_token',
      idempotencyScope: 'create-client',
      scopes: [],
      body: validateCreateClientBody,
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) => json(201, await createClient(deps, principal, body), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
