import { cancelCustomerSubscriptionSecurity } from '#shared/generated/security.ts';
import { validateCancelCustomerSubscriptionPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { changeCustomerSubscription } from '#shared/services/customer-subscriptions.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...cancelCustomerSubscriptionSecurity,
      path: validateCancelCustomerSubscriptionPath,
    },
    async ({ principal, path }) =>
      json(200, await changeCustomerSubscription(deps, principal, path.id, { kind: 'cancel' })),
  );

export const handler = createHandler(productionDependencies());
