import { deleteWebhookEndpointSecurity } from '#shared/generated/security.ts';
import { validateDeleteWebhookEndpointPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { noContent } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { deleteWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...deleteWebhookEndpointSecurity,
      path: validateDeleteWebhookEndpointPath,
    },
    async ({ principal, path }) => {
      await deleteWebhookEndpoint(deps, principal, path.id);
      return noContent();
    },
  );

export const handler = createHandler(productionDependencies());
