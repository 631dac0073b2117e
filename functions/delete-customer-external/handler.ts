import { deleteCustomerExternalSecurity } from '#shared/generated/security.ts';
import {
  deleteCustomerExternalQueryShape,
  validateDeleteCustomerExternalPath,
  validateDeleteCustomerExternalQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { noContent } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { deleteCustomer } from '#shared/services/delete-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...deleteCustomerExternalSecurity,
      path: validateDeleteCustomerExternalPath,
      query: { validate: validateDeleteCustomerExternalQuery, shape: deleteCustomerExternalQueryShape },
    },
    async ({ principal, path, query }) => {
      await deleteCustomer(deps, principal, { externalId: path.external_id }, query.anonymize === true);
      return noContent();
    },
  );

export const handler = createHandler(productionDependencies());
