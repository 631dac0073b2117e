import { listEventsSecurity } from '#shared/generated/security.ts';
import { listEventsQueryShape, validateListEventsQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listEvents } from '#shared/services/usage-events.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listEventsSecurity,
      query: { validate: validateListEventsQuery, shape: listEventsQueryShape },
    },
    async ({ principal, query }) => json(200, await listEvents(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
