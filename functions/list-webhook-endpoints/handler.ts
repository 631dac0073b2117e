import { listWebhookEndpointsSecurity } from '#shared/generated/security.ts';
import {
  listWebhookEndpointsQueryShape,
  validateListWebhookEndpointsQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { listWebhookEndpoints } from '#shared/services/webhook-endpoints.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listWebhookEndpointsSecurity,
      query: { validate: validateListWebhookEndpointsQuery, shape: listWebhookEndpointsQueryShape },
    },
    async ({ principal, query }) => json(200, await listWebhookEndpoints(deps, principal, query), NO_STORE),
  );

export const handler = createHandler(webhookKeyDependencies());
