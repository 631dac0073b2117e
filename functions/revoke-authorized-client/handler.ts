import { revokeAuthorizedClientSecurity } from '#shared/generated/security.ts';
import { validateRevokeAuthorizedClientPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { noContent } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { revokeAuthorizedClient } from '#shared/services/authorized-clients.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    // The user's own act: a personal access token, never a token delegated to some client.
    {
      deps,
      oauthAccessTokens: false,
      ...revokeAuthorizedClientSecurity,
      path: validateRevokeAuthorizedClientPath,
    },
    async ({ principal, path }) => {
      await revokeAuthorizedClient(deps, principal, path.client_id);
      return noContent();
    },
  );

export const handler = createHandler(productionDependencies());
