import { updateWebhookEndpointSecurity } from '#shared/generated/security.ts';
import {
  validateUpdateWebhookEndpointBody,
  validateUpdateWebhookEndpointPath,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { updateWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateWebhookEndpointSecurity,
      path: validateUpdateWebhookEndpointPath,
      body: validateUpdateWebhookEndpointBody,
    },
    async ({ principal, path, body }) =>
      json(200, await updateWebhookEndpoint(deps, principal, path.id, body), NO_STORE),
  );

export const handler = createHandler(webhookKeyDependencies());
