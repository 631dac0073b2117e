import { listCustomersSecurity } from '#shared/generated/security.ts';
import { listCustomersQueryShape, validateListCustomersQuery } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { listCustomers } from '#shared/services/list-customers.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...listCustomersSecurity,
      query: { validate: validateListCustomersQuery, shape: listCustomersQueryShape },
    },
    async ({ principal, query }) => json(200, await listCustomers(deps, principal, query)),
  );

export const handler = createHandler(productionDependencies());
