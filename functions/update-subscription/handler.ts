import { updateSubscriptionSecurity } from '#shared/generated/security.ts';
import {
  validateUpdateSubscriptionBody,
  validateUpdateSubscriptionPath,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { changeSubscription, lifecycleChangeOf } from '#shared/services/update-subscription.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateSubscriptionSecurity,
      path: validateUpdateSubscriptionPath,
      body: validateUpdateSubscriptionBody,
    },
    async ({ principal, path, body }) =>
      json(200, await changeSubscription(deps, principal, path.id, lifecycleChangeOf(body))),
  );

export const handler = createHandler(productionDependencies());
