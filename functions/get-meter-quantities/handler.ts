import { getMeterQuantitiesSecurity } from '#shared/generated/security.ts';
import {
  getMeterQuantitiesQueryShape,
  validateGetMeterQuantitiesPath,
  validateGetMeterQuantitiesQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getMeterQuantities } from '#shared/services/meter-quantities.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getMeterQuantitiesSecurity,
      path: validateGetMeterQuantitiesPath,
      query: { validate: validateGetMeterQuantitiesQuery, shape: getMeterQuantitiesQueryShape },
    },
    async ({ principal, path, query }) =>
      json(200, await getMeterQuantities(deps, principal, path.id, query)),
  );

export const handler = createHandler(productionDependencies());
