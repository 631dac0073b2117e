import { listCustomerMetersSecurity } from '#shared/generated/security.ts';
import {
  listCustomerMetersQueryShape,
  validateListCustomerMetersQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listCustomerMeters } from '#shared/services/customer-meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listCustomerMetersSecurity,
      query: { validate: validateListCustomerMetersQuery, shape: listCustomerMetersQueryShape },
    },
    async ({ principal, query }) => json(200, await listCustomerMeters(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
