import { listWebhookDeliveriesSecurity } from '#shared/generated/security.ts';
import {
  listWebhookDeliveriesQueryShape,
  validateListWebhookDeliveriesQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listWebhookDeliveries } from '#shared/services/webhook-deliveries.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listWebhookDeliveriesSecurity,
      query: { validate: validateListWebhookDeliveriesQuery, shape: listWebhookDeliveriesQueryShape },
    },
    async ({ principal, query }) => json(200, await listWebhookDeliveries(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
