import { createMeterSecurity } from '#shared/generated/security.ts';
import { validateCreateMeterBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { createMeter } from '#shared/services/meters.ts';

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-meter',
      ...createMeterSecurity,
      body: validateCreateMeterBody,
    },
    async ({ principal, body }) => json(201, await createMeter(deps, principal, body)),
  );

export const handler = createHandler(productionDependencies());
