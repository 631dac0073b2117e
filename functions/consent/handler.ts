import { consentSecurity } from '#shared/generated/security.ts';
import { validateConsentBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { NO_STORE, seeOther } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { consent } from '#shared/services/consent.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      // The user's own consent: a personal access token, never a token delegated to some client.
      oauthAccessTokens: false,
      ...consentSecurity,
      body: validateConsentBody,
      idempotencyScope: 'consent',
      errorHeaders: NO_STORE,
    },
    async ({ principal, body }) =>
      seeOther((await consent(deps, principal, body, { issuer: issuerOf(deps) })).location),
  );

export const handler = createHandler(productionDependencies());
