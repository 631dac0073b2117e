import { createCustomerSecurity } from '#shared/generated/security.ts';
import { validateCreateCustomerBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { createCustomer } from '#shared/services/create-customer.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-customer',
      ...createCustomerSecurity,
      body: validateCreateCustomerBody,
    },
    async ({ principal, body }) => json(201, await createCustomer(deps, principal, body)),
  );

export const handler = createHandler(productionDependencies());
