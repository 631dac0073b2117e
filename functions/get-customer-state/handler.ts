import { getCustomerStateSecurity } from '#shared/generated/security.ts';
import { validateGetCustomerStatePath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getCustomerState } from '#shared/services/customer-state.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getCustomerStateSecurity,
      path: validateGetCustomerStatePath,
    },
    async ({ principal, path }) => json(200, await getCustomerState(deps, principal, { id: path.id })),
  );

export const handler = createHandler(productionDependencies());
