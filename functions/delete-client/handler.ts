import { deleteClientSecurity } from '#shared/generated/security.ts';
import { validateDeleteClientPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { NO_STORE, noContent } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { deleteClient } from '#shared/services/client-registration.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...deleteClientSecurity,
      path: validateDeleteClientPath,
      errorHeaders: NO_STORE,
    },
    async ({ principal }) => {
      await deleteClient(deps, principal);
      return noContent(NO_STORE);
    },
  );

export const handler = createHandler(productionDependencies());
