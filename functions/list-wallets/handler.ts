import { listWalletsSecurity } from '#shared/generated/security.ts';
import { listWalletsQueryShape, validateListWalletsQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listWallets } from '#shared/services/list-wallets.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listWalletsSecurity,
      query: { validate: validateListWalletsQuery, shape: listWalletsQueryShape },
    },
    async ({ principal, query }) => json(200, await listWallets(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
