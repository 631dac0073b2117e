import { resetWebhookEndpointSecretSecurity } from '#shared/generated/security.ts';
import {
  resetWebhookEndpointSecretQueryShape,
  validateResetWebhookEndpointSecretPath,
  validateResetWebhookEndpointSecretQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json, NO_STORE } from '#shared/http/responses.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { resetWebhookEndpointSecret, SECRET_OVERLAP_MS } from '#shared/services/webhook-endpoints.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...resetWebhookEndpointSecretSecurity,
      path: validateResetWebhookEndpointSecretPath,
      query: {
        validate: validateResetWebhookEndpointSecretQuery,
        shape: resetWebhookEndpointSecretQueryShape,
      },
    },
    async ({ principal, path, query }) => {
      const overlap = query.previous_secret_overlap_seconds;
      const overlapMs = overlap === undefined ? SECRET_OVERLAP_MS : overlap * 1000;
      return json(200, await resetWebhookEndpointSecret(deps, principal, path.id, overlapMs), NO_STORE);
    },
  );

export const handler = createHandler(webhookKeyDependencies());
