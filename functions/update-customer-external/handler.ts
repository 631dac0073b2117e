import { updateCustomerExternalSecurity } from '#shared/generated/security.ts';
import {
  validateUpdateCustomerExternalBody,
  validateUpdateCustomerExternalPath,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { updateCustomer } from '#shared/services/update-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateCustomerExternalSecurity,
      path: validateUpdateCustomerExternalPath,
      body: validateUpdateCustomerExternalBody,
    },
    async ({ principal, path, body }) =>
      json(200, await updateCustomer(deps, principal, { externalId: path.external_id }, body)),
  );

export const handler = createHandler(productionDependencies());
