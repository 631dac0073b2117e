import { deleteCustomerSecurity } from '#shared/generated/security.ts';
import {
  deleteCustomerQueryShape,
  validateDeleteCustomerPath,
  validateDeleteCustomerQuery,
} from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { noContent } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { deleteCustomer } from '#shared/services/delete-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...deleteCustomerSecurity,
      path: validateDeleteCustomerPath,
      query: { validate: validateDeleteCustomerQuery, shape: deleteCustomerQueryShape },
    },
    async ({ principal, path, query }) => {
      await deleteCustomer(deps, principal, { id: path.id }, query.anonymize === true);
      return noContent();
    },
  );

export const handler = createHandler(productionDependencies());
