import { redeliverWebhookEventSecurity } from '#shared/generated/security.ts';
import { validateRedeliverWebhookEventPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { redeliverWebhookEvent } from '#shared/services/webhook-deliveries.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'redeliver-webhook-event',
      ...redeliverWebhookEventSecurity,
      path: validateRedeliverWebhookEventPath,
    },
    async ({ principal, path }) => json(202, await redeliverWebhookEvent(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
