import { resetWebhookEndpointSecretSecurity } from '#shared/generated/security.ts';
import { validateResetWebhookEndpointSecretPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { resetWebhookEndpointSecret } from '#shared/services/webhook-endpoints.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...resetWebhookEndpointSecretSecurity,
      path: validateResetWebhookEndpointSecretPath,
    },
    async ({ principal, path }) =>
      json(200, await resetWebhookEndpointSecret(deps, principal, path.id), NO_STORE),
  );

export const handler = createHandler(webhookKeyDependencies());
