import { ingestEventsSecurity } from '#shared/generated/security.ts';
import { validateIngestEventsBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { ingestEvents } from '#shared/services/usage-events.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'ingest-events',
      ...ingestEventsSecurity,
      body: validateIngestEventsBody,
    },
    async ({ principal, body }) => json(200, await ingestEvents(deps, principal, body)),
  );

export const handler = createHandler(productionDependencies());
