import { authorizeSecurity } from '#shared/generated/security.ts';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE, seeOther } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { authorize } from '#shared/services/authorize.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    // The user's own consent: a personal access token, never a token delegated to some client.
    {
      deps,
      oauthAccessTokens: false,
      ...authorizeSecurity,
      errorHeaders: NO_STORE,
    },
    // The service reads the query itself: a repeated parameter is an RFC 6749 fault, not the last one wins.
    async ({ principal, rawQuery }) => {
      const result = await authorize(deps, principal, rawQuery, { issuer: issuerOf(deps) });
      return 'redirect' in result ? seeOther(result.redirect) : json(200, result.consent, NO_STORE);
    },
  );

export const handler = createHandler(productionDependencies());
