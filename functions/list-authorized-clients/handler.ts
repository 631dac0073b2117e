import { listAuthorizedClientsSecurity } from '#shared/generated/security.ts';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listAuthorizedClients } from '#shared/services/authorized-clients.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    // The user's own list: a personal access token, never a token delegated to some client.
    { deps, oauthAccessTokens: false, ...listAuthorizedClientsSecurity },
    async ({ principal }) => json(200, await listAuthorizedClients(deps, principal)),
  );

export const handler = createHandler(productionDependencies());
