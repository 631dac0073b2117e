import { createCustomerSessionSecurity } from '#shared/generated/security.ts';
import { validateCreateCustomerSessionBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, issuerOf, productionDependencies } from '#shared/runtime.ts';
import { createCustomerSession, portalBaseUrl } from '#shared/services/create-customer-session.ts';

/** The answer carries a live bearer token: no cache may keep it. */
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

export const createHandler = (deps: Dependencies) =>
  api(
    {
      deps,
      idempotencyScope: 'create-customer-session',
      ...createCustomerSessionSecurity,
      body: validateCreateCustomerSessionBody,
    },
    async ({ principal, body }) =>
      json(
        201,
        await createCustomerSession(deps, principal, body, { baseUrl: portalBaseUrl(issuerOf(deps)) }),
        NO_STORE,
      ),
  );

export const handler = createHandler(productionDependencies());
