import { listSubscriptionsSecurity } from '#shared/generated/security.ts';
import { listSubscriptionsQueryShape, validateListSubscriptionsQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listSubscriptions } from '#shared/services/list-subscriptions.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listSubscriptionsSecurity,
      query: { validate: validateListSubscriptionsQuery, shape: listSubscriptionsQueryShape },
    },
    async ({ principal, query }) => json(200, await listSubscriptions(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
