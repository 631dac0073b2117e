import { getWalletSecurity } from '#shared/generated/security.ts';
import { validateGetWalletPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getWallet } from '#shared/services/get-wallet.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getWalletSecurity,
      path: validateGetWalletPath,
    },
    async ({ principal, path }) => json(200, await getWallet(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
