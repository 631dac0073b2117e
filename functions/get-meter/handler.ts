import { getMeterSecurity } from '#shared/generated/security.ts';
import { validateGetMeterPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { getMeter } from '#shared/services/meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...getMeterSecurity,
      path: validateGetMeterPath,
    },
    async ({ principal, path }) => json(200, await getMeter(deps, principal, path.id)),
  );

export const handler = createHandler(productionDependencies());
