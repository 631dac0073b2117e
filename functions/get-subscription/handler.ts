import { getSubscriptionSecurity } from '#shared/generated/security.ts';
import { validateGetSubscriptionPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getSubscription } from '#shared/services/get-subscription.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getSubscriptionSecurity,
      path: validateGetSubscriptionPath,
    },
    async ({ principal, path }) => json(200, await getSubscription(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
