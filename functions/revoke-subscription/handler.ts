import { revokeSubscriptionSecurity } from '#shared/generated/security.ts';
import { validateRevokeSubscriptionPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { changeSubscription } from '#shared/services/update-subscription.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...revokeSubscriptionSecurity,
      path: validateRevokeSubscriptionPath,
    },
    async ({ principal, path }) =>
      json(200, await changeSubscription(deps, principal, path.id, { kind: 'revoke' })),
  );

export const handler = createHandler(productionDependencies());
