import { listMetersSecurity } from '#shared/generated/security.ts';
import { listMetersQueryShape, validateListMetersQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listMeters } from '#shared/services/meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listMetersSecurity,
      query: { validate: validateListMetersQuery, shape: listMetersQueryShape },
    },
    async ({ principal, query }) => json(200, await listMeters(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
