import { getEventSecurity } from '#shared/generated/security.ts';
import { validateGetEventPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getEvent } from '#shared/services/usage-events.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getEventSecurity,
      path: validateGetEventPath,
    },
    async ({ principal, path }) => json(200, await getEvent(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
