import { getCustomerSecurity } from '#shared/generated/security.ts';
import { validateGetCustomerPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getCustomer } from '#shared/services/get-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getCustomerSecurity,
      path: validateGetCustomerPath,
    },
    async ({ principal, path }) => json(200, await getCustomer(deps, principal, { id: path.id })),
  );

export const handler = createHandler(productionDependencies());
