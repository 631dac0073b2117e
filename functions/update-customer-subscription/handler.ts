import { updateCustomerSubscriptionSecurity } from '#shared/generated/security.ts';
import {
  validateUpdateCustomerSubscriptionBody,
  validateUpdateCustomerSubscriptionPath,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { changeCustomerSubscription, customerChangeOf } from '#shared/services/customer-subscriptions.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateCustomerSubscriptionSecurity,
      path: validateUpdateCustomerSubscriptionPath,
      body: validateUpdateCustomerSubscriptionBody,
    },
    async ({ principal, path, body }) =>
      json(200, await changeCustomerSubscription(deps, principal, path.id, customerChangeOf(body))),
  );

export const handler = createHandler(productionDependencies());
