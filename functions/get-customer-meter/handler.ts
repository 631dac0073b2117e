import { getCustomerMeterSecurity } from '#shared/generated/security.ts';
import { validateGetCustomerMeterPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getCustomerMeter } from '#shared/services/customer-meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getCustomerMeterSecurity,
      path: validateGetCustomerMeterPath,
    },
    async ({ principal, path }) => json(200, await getCustomerMeter(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
