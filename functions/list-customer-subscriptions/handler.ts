import { listCustomerSubscriptionsSecurity } from '#shared/generated/security.ts';
import {
  listCustomerSubscriptionsQueryShape,
  validateListCustomerSubscriptionsQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listCustomerSubscriptions } from '#shared/services/customer-subscriptions.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listCustomerSubscriptionsSecurity,
      query: { validate: validateListCustomerSubscriptionsQuery, shape: listCustomerSubscriptionsQueryShape },
    },
    async ({ principal, query }) => json(200, await listCustomerSubscriptions(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
