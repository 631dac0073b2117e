import { TOKEN_ENDPOINT_AUTH_METHODS } from '#shared/domain/oauth.ts';
import { requestTokenSecurity } from '#shared/generated/security.ts';
import { validateRequestTokenBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import { kmsIdTokenKeysFromEnv } from '#shared/oauth/kms-keys.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { requestToken } from '#shared/services/request-token.ts';

// No Idempotency-Key: a replayed answer would hand the tokens out again, and a public client has no
// secret to seal it under. RFC 6749 makes a code single-use instead.
export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      clientAuthMethods: TOKEN_ENDPOINT_AUTH_METHODS,
      ...requestTokenSecurity,
      body: validateRequestTokenBody,
      form: true,
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) => json(200, await requestToken(deps, principal, body), NO_STORE),
  );

// ID Tokens are signed by the stage's KMS key (kms:Sign on it alone: infra/stack.ts).
export const handler = createHandler({ ...productionDependencies(), idTokenKeys: kmsIdTokenKeysFromEnv() });
