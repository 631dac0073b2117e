import { createCustomerSessionSecurity } from '#shared/generated/security.ts';
import { validateCreateCustomerSessionBody } from '#shared/generated/validators.js';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
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
    async ({ principal, body, headers }) =>
      json(
        201,
        await createCustomerSession(deps, principal, body, { baseUrl: portalBaseUrl(headers.host) }),
        NO_STORE,
      ),
  );

export const handler = createHandler(productionDependencies());
