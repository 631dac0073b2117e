import { getCustomerExternalSecurity } from '#shared/generated/security.ts';
import { validateGetCustomerExternalPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getCustomer } from '#shared/services/get-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getCustomerExternalSecurity,
      path: validateGetCustomerExternalPath,
    },
    async ({ principal, path }) =>
      json(200, await getCustomer(deps, principal, { externalId: path.external_id })),
  );

export const handler = createHandler(productionDependencies());
