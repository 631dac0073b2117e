import { getWebhookEndpointSecurity } from '#shared/generated/security.ts';
import { validateGetWebhookEndpointPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { getWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getWebhookEndpointSecurity,
      path: validateGetWebhookEndpointPath,
    },
    async ({ principal, path }) => json(200, await getWebhookEndpoint(deps, principal, path.id), NO_STORE),
  );

export const handler = createHandler(webhookKeyDependencies());
