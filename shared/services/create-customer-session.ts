/**
 * Customer sessions: a one-hour bearer token for one customer, for the customer portal operations.
 * The API (`createCustomerSession`) and the operator CLI (`openCustomerSession`) write them the
 * same way: only the token's SHA-256 is stored, and only while the customer is live.
 */

import { access as catalogAccess, findSessionCustomer } from '../data/catalog.ts';
import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import type { CustomerRecord, CustomerSessionRecord } from '../data/records.ts';
import { insertCustomerSession, access as tokensAccess } from '../data/tokens.ts';
import {
  AmbiguousExternalCustomerId,
  ConditionFailed,
  PolarRequestValidationError,
  type ValidationIssue,
} from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import { CUSTOMER_SESSION_SCOPE } from '../domain/scopes.ts';
import { generateSecret, hashSecret, secretPrefixes } from '../domain/secrets.ts';
import { CUSTOMER_PORTAL_URL_ENV } from '../env.ts';
import type { CreateCustomerSessionBody, CustomerSession } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { presentCustomer } from './presenters.ts';

export const CUSTOMER_SESSION_TTL_SECONDS = 3600;

/** Writes a new session for a live customer; `ConditionFailed` if the customer is gone meanwhile. */
export async function openCustomerSession(
  deps: Pick<Dependencies, 'table' | 'now'>,
  customer: CustomerRecord,
  ttlSeconds = CUSTOMER_SESSION_TTL_SECONDS,
): Promise<{ token: string; record: CustomerSessionRecord }> {
  const token = generateSecret(secretPrefixes.customerSession);
  const created = deps.now();
  const record: CustomerSessionRecord = {
    kind: 'customer_session',
    token_id: newId(),
    customer_id: customer.id,
    organization_id: customer.organization_id,
    scope: CUSTOMER_SESSION_SCOPE,
    created_at: created.toISOString(),
    expires_at: new Date(created.getTime() + ttlSeconds * 1000).toISOString(),
    revoked_at: null,
  };
  await insertCustomerSession(deps.table, hashSecret(token), record);
  countBusinessEvent('CustomerSessionsCreated');
  return { token, record };
}

export interface PortalLocation {
  /** `https://portal.example.com`: the configured portal, else the API's own origin. */
  baseUrl: string;
}

/**
 * The body's fields. The schema's "one of these is required" (`anyOf` of `required`) comes out of
 * openapi-typescript as a union of partial shapes; the validator has checked the whole.
 */
type SessionRequest = Extract<CreateCustomerSessionBody, { return_url?: unknown }>;

export async function createCustomerSession(
  deps: Dependencies,
  principal: UserPrincipal,
  validated: CreateCustomerSessionBody,
  portal: PortalLocation,
): Promise<CustomerSession> {
  const body = validated as SessionRequest;
  const externalId = body.external_customer_id ?? body.customer_external_id;
  const by =
    body.customer_id !== undefined
      ? { customerId: normalizeId(body.customer_id) }
      : { externalId: externalId as string };
  const issue = (msg: string): ValidationIssue =>
    'customerId' in by
      ? { loc: ['body', 'customer_id'], msg, type: 'value_error', input: body.customer_id }
      : { loc: ['body', 'external_customer_id'], msg, type: 'value_error', input: externalId };
  const { customers, organizations } = await findSessionCustomer(deps.table, by, principal.organizationIds);
  const [customer] = customers;
  if (!customer) throw new PolarRequestValidationError([issue('Customer does not exist.')]);
  if (customers.length > 1) throw new AmbiguousExternalCustomerId();
  let opened: Awaited<ReturnType<typeof openCustomerSession>>;
  try {
    opened = await openCustomerSession(deps, customer);
  } catch (error) {
    // Deleted between the read and the write: as if it had never existed.
    if (error instanceof ConditionFailed) {
      throw new PolarRequestValidationError([issue('Customer does not exist.')]);
    }
    throw error;
  }
  const organization = organizations.get(customer.organization_id);
  const url = new URL(
    `${portal.baseUrl.replace(/\/+$/, '')}/${organization?.slug ?? customer.organization_id}/portal`,
  );
  // In the fragment, which a browser never sends: not to the portal's server or its access logs, not
  // in a Referer. No e-mail: the portal reads the customer with the token.
  url.hash = new URLSearchParams({ customer_session_token: opened.token }).toString();
  return {
    id: opened.record.token_id,
    created_at: opened.record.created_at,
    modified_at: null,
    token: opened.token,
    expires_at: opened.record.expires_at as string,
    return_url: body.return_url ?? null,
    customer_portal_url: url.toString(),
    customer_id: customer.id,
    customer: presentCustomer(customer),
  };
}

/**
 * The configured portal, else the API's own base URL (the configured issuer, never the request's
 * `Host`): the portal URL carries the session token, so it never defaults to anyone else's site.
 */
export function portalBaseUrl(apiBaseUrl: string, configured = process.env[CUSTOMER_PORTAL_URL_ENV]): string {
  return configured || apiBaseUrl;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createCustomerSession: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...catalogAccess.findSessionCustomer,
      ...tokensAccess.insertCustomerSession,
    ],
  },
});
