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
      credential: 'personal_access_token',
      scopes: ['subscriptions:write'],
      path: validateUpdateSubscriptionPath,
      body: validateUpdateSubscriptionBody,
    },
    async ({ principal, path, body }) =>
      json(200, await changeSubscription(deps, principal, path.id, lifecycleChangeOf(body))),
  );

export const handler = createHandler(productionDependencies());
