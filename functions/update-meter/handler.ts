import { updateMeterSecurity } from '#shared/generated/security.ts';
import { validateUpdateMeterBody, validateUpdateMeterPath } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { updateMeter } from '#shared/services/meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      ...updateMeterSecurity,
      path: validateUpdateMeterPath,
      body: validateUpdateMeterBody,
    },
    async ({ principal, path, body }) => json(200, await updateMeter(deps, principal, path.id, body)),
  );

export const handler = createHandler(productionDependencies());
