import { getPortalMeterSecurity } from '#shared/generated/security.ts';
import { validateGetPortalMeterPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getPortalMeter } from '#shared/services/portal-meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getPortalMeterSecurity,
      path: validateGetPortalMeterPath,
    },
    async ({ principal, path }) => json(200, await getPortalMeter(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
