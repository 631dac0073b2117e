import { listPortalMetersSecurity } from '#shared/generated/security.ts';
import { listPortalMetersQueryShape, validateListPortalMetersQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listPortalMeters } from '#shared/services/portal-meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listPortalMetersSecurity,
      query: { validate: validateListPortalMetersQuery, shape: listPortalMetersQueryShape },
    },
    async ({ principal, query }) => json(200, await listPortalMeters(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
