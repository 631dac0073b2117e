import { TOKEN_ENDPOINT_AUTH_METHODS } from '#shared/domain/oauth.ts';
import { revokeTokenSecurity } from '#shared/generated/security.ts';
import { validateRevokeTokenBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { revokeToken } from '#shared/services/revoke-token.ts';

// Public clients may revoke their own tokens. Revocation is idempotent by itself (RFC 7009), so no
// Idempotency-Key is kept.
export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      clientAuthMethods: TOKEN_ENDPOINT_AUTH_METHODS,
      ...revokeTokenSecurity,
      body: validateRevokeTokenBody,
      form: true,
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) => json(200, await revokeToken(deps, principal, body), NO_STORE),
  );

export const handler = createHandler(productionDependencies());
