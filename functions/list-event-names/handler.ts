import { listEventNamesSecurity } from '#shared/generated/security.ts';
import { listEventNamesQueryShape, validateListEventNamesQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listEventNames } from '#shared/services/usage-events.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listEventNamesSecurity,
      query: { validate: validateListEventNamesQuery, shape: listEventNamesQueryShape },
    },
    async ({ principal, query }) => json(200, await listEventNames(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
