import { createSubscriptionSecurity } from '#shared/generated/security.ts';
import { validateCreateSubscriptionBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { createSubscription } from '#shared/services/create-subscription.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-subscription',
      ...createSubscriptionSecurity,
      body: validateCreateSubscriptionBody,
    },
    async ({ principal, body }) => json(201, await createSubscription(deps, principal, body)),
  );

export const handler = createHandler(productionDependencies());
