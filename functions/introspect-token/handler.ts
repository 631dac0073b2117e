import { introspectTokenSecurity } from '#shared/generated/security.ts';
import { validateIntrospectTokenBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { introspectToken } from '#shared/services/introspect-token.ts';

// RFC 7662 §2.1: the caller must authenticate, which a public client cannot. Introspection writes
// nothing: no Idempotency-Key to keep.
export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
      ...introspectTokenSecurity,
      body: validateIntrospectTokenBody,
      form: true,
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) =>
      json(200, await introspectToken(deps, principal, body, { issuer: issuerOf(deps) }), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
