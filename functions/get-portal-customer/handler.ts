import { getPortalCustomerSecurity } from '#shared/generated/security.ts';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getPortalCustomer } from '#shared/services/get-portal-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api({ deps, ...getPortalCustomerSecurity }, async ({ principal }) =>
    json(200, await getPortalCustomer(deps, principal)),
  );

export const handler = createHandler(productionDependencies());
