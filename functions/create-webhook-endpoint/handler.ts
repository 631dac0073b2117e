import { createWebhookEndpointSecurity } from '#shared/generated/security.ts';
import { validateCreateWebhookEndpointBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { createWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-webhook-endpoint',
      ...createWebhookEndpointSecurity,
      body: validateCreateWebhookEndpointBody,
    },
    async ({ principal, body }) => json(201, await createWebhookEndpoint(deps, principal, body), NO_STORE),
  );

export const handler = createHandler(webhookKeyDependencies());
