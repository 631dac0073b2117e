import { getCustomerSubscriptionSecurity } from '#shared/generated/security.ts';
import { validateGetCustomerSubscriptionPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getCustomerSubscription } from '#shared/services/customer-subscriptions.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getCustomerSubscriptionSecurity,
      path: validateGetCustomerSubscriptionPath,
    },
    async ({ principal, path }) => json(200, await getCustomerSubscription(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
