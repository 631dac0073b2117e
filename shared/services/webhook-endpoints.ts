/**
 * Webhook endpoints: create, list, get, update, reset the secret, delete.
 *
 * The signing secret is generated here, sealed with the current key of the webhook key set and
 * bound to the endpoint's id before it is stored, and opened again for every answer that shows it.
 * Only a credential that may change the endpoint (`webhooks:write`) is shown it, as the hosted
 * service shows it on every read; a `webhooks:read` credential gets `WEBHOOK_SECRET_PLACEHOLDER` in
 * its place, since the secret would let it forge deliveries. Every change is computed from a strongly
 * consistent read and written on the condition that the endpoint is still as read; a change that
 * loses a race is decided again on fresh data (a deleted endpoint is then a 404), a few times, then
 * answered 409.
 */

import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { ListReadTooCostly, parseListSorting } from '../data/listing.ts';
import type { WebhookEndpointRecord, WebhookFormat } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import {
  EndpointChanged,
  insertWebhookEndpoint,
  listWebhookEndpointPage,
  getWebhookEndpoint as readEndpoint,
  replaceWebhookEndpoint,
  resealWebhookEndpoint,
  scanWebhookEndpoints,
  softDeleteWebhookEndpoint,
  type WebhookEndpointSortField,
  access as webhooksAccess,
} from '../data/webhooks.ts';
import {
  PolarRequestValidationError,
  RequestValidationError,
  ResourceNotFound,
  WebhookEndpointLocked,
} from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import { openWith, sealedVersion, sealWith } from '../domain/keyring.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import { generateWebhookSecret, WEBHOOK_SECRET_PLACEHOLDER } from '../domain/secrets.ts';
import type {
  CreateWebhookEndpointBody,
  ListResourceWebhookEndpoint,
  ListWebhookEndpointsQuery,
  UpdateWebhookEndpointBody,
  WebhookEndpoint,
} from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { checkWebhookUrl } from '../webhooks/address-guard.ts';
import { organizationFor } from './organizations.ts';
import { pageWindow, pagination, withinAnswerLimit } from './paging.ts';
import { presentWebhookEndpoint } from './presenters.ts';

/**
 * How long a replaced secret keeps signing beside the new one unless the reset says otherwise (the
 * Standard Webhooks norm, as Svix), and the longest a reset may ask for.
 */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
/** The scope that may read an endpoint's signing secret: the one that may change the endpoint. */
const SECRET_SCOPE = 'webhooks:write';
/** Reads and conditional writes a change may take when concurrent changes keep winning. */
const CHANGE_ATTEMPTS = 3;
const DEFAULT_SORTING = ['-created_at'];

const REENABLE_INVALID_URL =
  'Cannot enable a webhook endpoint with an invalid URL. Please update the URL first.';

/** The URL as stored, or the contract's 422 at its location. */
function checkedUrl(deps: Dependencies, input: string, loc: string[]): string {
  const checked = checkWebhookUrl(input, deps.webhooks.addresses);
  if (!checked.ok) throw new RequestValidationError([{ loc, msg: checked.msg, type: checked.type, input }]);
  return checked.url;
}

const distinct = (events: readonly string[]): string[] => [...new Set(events)];

/**
 * The endpoint as the caller may see it: with its secret for a writer (who could reset it and read
 * the new one anyway), with the placeholder for a reader, whose answer then needs no key set at all.
 */
async function shown(
  deps: Dependencies,
  principal: UserPrincipal,
  endpoint: WebhookEndpointRecord,
): Promise<WebhookEndpoint> {
  if (!principal.scopes.has(SECRET_SCOPE))
    return presentWebhookEndpoint(endpoint, WEBHOOK_SECRET_PLACEHOLDER);
  const secret = await openWith(deps.webhooks.keyring, endpoint.secret_ciphertext, endpoint.id);
  return presentWebhookEndpoint(endpoint, secret);
}

/** A live endpoint of one of the caller's organizations; anything else is the same 404. */
async function ownedEndpoint(
  deps: Dependencies,
  principal: UserPrincipal,
  endpointId: string,
): Promise<WebhookEndpointRecord> {
  const endpoint = await readEndpoint(deps.table, endpointId);
  if (
    !endpoint ||
    endpoint.deleted_at !== null ||
    !principal.organizationIds.includes(endpoint.organization_id)
  ) {
    throw new ResourceNotFound();
  }
  return endpoint;
}

/** Reads the endpoint and runs `write` on it, again on a fresh read when a concurrent change won. */
async function onFreshEndpoint<T>(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  write: (current: WebhookEndpointRecord) => Promise<T>,
): Promise<T> {
  const endpointId = normalizeId(id);
  for (let attempt = 1; attempt <= CHANGE_ATTEMPTS; attempt++) {
    const current = await ownedEndpoint(deps, principal, endpointId);
    try {
      return await write(current);
    } catch (error) {
      if (!(error instanceof EndpointChanged)) throw error;
    }
  }
  throw new WebhookEndpointLocked();
}

export interface NewWebhookEndpoint {
  url: string;
  name?: string | null;
  format: WebhookFormat;
  events: readonly string[];
}

/**
 * A new endpoint of an organization: URL checked, secret generated and sealed, the endpoint and its
 * list entries written in one transaction. The API and the operator CLI both create through this.
 */
export async function openWebhookEndpoint(
  deps: Dependencies,
  organizationId: string,
  input: NewWebhookEndpoint,
): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  const url = checkedUrl(deps, input.url, ['body', 'url']);
  const id = newId();
  const secret = generateWebhookSecret();
  const endpoint: WebhookEndpointRecord = {
    id,
    organization_id: organizationId,
    url,
    name: input.name ?? null,
    format: input.format,
    secret_ciphertext: await sealWith(deps.webhooks.keyring, secret, id),
    previous_secret_ciphertext: null,
    previous_secret_expires_at: null,
    events: distinct(input.events),
    enabled: true,
    disabled_reason: null,
    failure_count: 0,
    created_at: deps.now().toISOString(),
    modified_at: null,
    deleted_at: null,
    revision: 1,
  };
  await insertWebhookEndpoint(deps.table, endpoint);
  return { endpoint, secret };
}

export async function createWebhookEndpoint(
  deps: Dependencies,
  principal: UserPrincipal,
  body: CreateWebhookEndpointBody,
): Promise<WebhookEndpoint> {
  const organizationId = organizationFor(principal, body.organization_id);
  const { endpoint, secret } = await openWebhookEndpoint(deps, organizationId, body);
  return presentWebhookEndpoint(endpoint, secret);
}

/** A page of the live endpoints of the caller's organizations (those `organization_id` names, if given). */
export async function listWebhookEndpoints(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListWebhookEndpointsQuery,
): Promise<ListResourceWebhookEndpoint> {
  const window = pageWindow(query);
  const wanted = query.organization_id?.map(normalizeId);
  const owners = principal.organizationIds.filter((id) => !wanted || wanted.includes(id));
  const { items, total } = await listWebhookEndpointPage(
    deps.table,
    owners,
    parseListSorting<WebhookEndpointSortField>(query.sorting, DEFAULT_SORTING),
    window.offset,
    window.limit,
  ).catch((error: unknown) => {
    // This operation's 422 is the plain `RequestValidationError` of the contract.
    throw error instanceof ListReadTooCostly ? new RequestValidationError(error.issues) : error;
  });
  return withinAnswerLimit(
    {
      items: await Promise.all(items.map((endpoint) => shown(deps, principal, endpoint))),
      pagination: pagination(total, window),
    },
    (issues) => new RequestValidationError(issues),
  );
}

export async function getWebhookEndpoint(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<WebhookEndpoint> {
  return shown(deps, principal, await ownedEndpoint(deps, principal, normalizeId(id)));
}

/** The endpoint with the body's changes applied, or undefined when they change nothing. */
function changed(
  deps: Dependencies,
  current: WebhookEndpointRecord,
  body: UpdateWebhookEndpointBody,
): WebhookEndpointRecord | undefined {
  const next: WebhookEndpointRecord = { ...current };
  if (body.url !== undefined && body.url !== null) next.url = checkedUrl(deps, body.url, ['body', 'url']);
  if (body.name !== undefined) next.name = body.name;
  if (body.format !== undefined && body.format !== null) next.format = body.format;
  if (body.events !== undefined && body.events !== null) next.events = distinct(body.events);
  if (body.enabled === false && current.enabled) {
    next.enabled = false;
    next.disabled_reason = 'disabled_by_user';
  }
  if (body.enabled === true && !current.enabled) {
    // A URL stored under rules that no longer hold (or another stack's) is not delivered to again.
    if (next.url === current.url && !checkWebhookUrl(current.url, deps.webhooks.addresses).ok) {
      throw new PolarRequestValidationError([
        { loc: ['body', 'enabled'], msg: REENABLE_INVALID_URL, type: 'value_error', input: true },
      ]);
    }
    next.enabled = true;
    next.disabled_reason = null;
    next.failure_count = 0;
  }
  const fields = (e: WebhookEndpointRecord) =>
    JSON.stringify([e.url, e.name, e.format, e.events, e.enabled, e.disabled_reason, e.failure_count]);
  if (fields(next) === fields(current)) return undefined;
  return { ...next, modified_at: deps.now().toISOString(), revision: current.revision + 1 };
}

export async function updateWebhookEndpoint(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  body: UpdateWebhookEndpointBody,
): Promise<WebhookEndpoint> {
  const endpoint = await onFreshEndpoint(deps, principal, id, async (current) => {
    const next = changed(deps, current, body);
    if (!next) return current;
    await replaceWebhookEndpoint(deps.table, current, next);
    return next;
  });
  return shown(deps, principal, endpoint);
}

/**
 * A new secret; the replaced one keeps signing for `overlapMs` (default `SECRET_OVERLAP_MS`; 0 ends
 * it at once, for a secret that leaked). One previous secret at most: a secret an earlier reset
 * replaced stops signing now.
 */
export async function resetWebhookEndpointSecret(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  overlapMs: number = SECRET_OVERLAP_MS,
): Promise<WebhookEndpoint> {
  return onFreshEndpoint(deps, principal, id, async (current) => {
    const secret = generateWebhookSecret();
    const now = deps.now();
    const overlaps = overlapMs > 0;
    const next: WebhookEndpointRecord = {
      ...current,
      secret_ciphertext: await sealWith(deps.webhooks.keyring, secret, current.id),
      previous_secret_ciphertext: overlaps ? current.secret_ciphertext : null,
      previous_secret_expires_at: overlaps ? new Date(now.getTime() + overlapMs).toISOString() : null,
      modified_at: now.toISOString(),
      revision: current.revision + 1,
    };
    await replaceWebhookEndpoint(deps.table, current, next);
    return presentWebhookEndpoint(next, secret);
  });
}

/**
 * Soft delete: the endpoint keeps its history, stops receiving events at once (`enabled` false) and
 * leaves the organization's list in the same write. Of concurrent deletes exactly one is a 204; the
 * others read it deleted: 404.
 */
export async function deleteWebhookEndpoint(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<void> {
  await onFreshEndpoint(deps, principal, id, (current) =>
    softDeleteWebhookEndpoint(deps.table, current, deps.now().toISOString()),
  );
}

/**
 * The secrets that sign a delivery to this endpoint at `at`: its secret, and the one a reset
 * replaced while its overlap lasts. For the delivery pipeline.
 */
export async function signingSecrets(
  deps: Dependencies,
  endpoint: WebhookEndpointRecord,
  at: Date,
): Promise<string[]> {
  const { keyring } = deps.webhooks;
  const secrets = [await openWith(keyring, endpoint.secret_ciphertext, endpoint.id)];
  if (
    endpoint.previous_secret_ciphertext &&
    endpoint.previous_secret_expires_at &&
    Date.parse(endpoint.previous_secret_expires_at) > at.getTime()
  ) {
    secrets.push(await openWith(keyring, endpoint.previous_secret_ciphertext, endpoint.id));
  }
  return secrets;
}

export interface ResealReport {
  /** The version every secret is sealed under now. */
  current: string;
  endpoints: number;
  resealed: number;
  /** Endpoints whose changes kept winning: run again. */
  skipped: string[];
  /** The versions still in use afterwards, by number of secrets: only `current` once all went well. */
  versions: Record<string, number>;
}

/**
 * After an operator made a new version of the key set current: every endpoint's secrets (deleted
 * endpoints' too) sealed again under it, each on the revision read (a change that wins meanwhile
 * is read again), so that older versions can leave the key set. A replaced secret whose overlap
 * has ended is dropped instead. Nothing an API caller sees changes. Operator CLI only.
 */
export async function resealWebhookSecrets(deps: Dependencies): Promise<ResealReport> {
  const { keyring } = deps.webhooks;
  const { current } = await keyring(true);
  const report: ResealReport = { current, endpoints: 0, resealed: 0, skipped: [], versions: {} };
  const count = (sealed: string | null) => {
    if (sealed) report.versions[sealedVersion(sealed)] = (report.versions[sealedVersion(sealed)] ?? 0) + 1;
  };
  const resealed = async (endpoint: WebhookEndpointRecord): Promise<WebhookEndpointRecord | undefined> => {
    const previousLive =
      endpoint.previous_secret_ciphertext !== null &&
      endpoint.previous_secret_expires_at !== null &&
      Date.parse(endpoint.previous_secret_expires_at) > deps.now().getTime();
    const stale = (sealed: string | null) => sealed !== null && sealedVersion(sealed) !== current;
    const dropsPrevious = endpoint.previous_secret_ciphertext !== null && !previousLive;
    const resealsPrevious = previousLive && stale(endpoint.previous_secret_ciphertext);
    if (!stale(endpoint.secret_ciphertext) && !resealsPrevious && !dropsPrevious) return undefined;
    const again = async (sealed: string) =>
      sealWith(keyring, await openWith(keyring, sealed, endpoint.id), endpoint.id);
    return {
      ...endpoint,
      secret_ciphertext: stale(endpoint.secret_ciphertext)
        ? await again(endpoint.secret_ciphertext)
        : endpoint.secret_ciphertext,
      previous_secret_ciphertext:
        previousLive && endpoint.previous_secret_ciphertext
          ? stale(endpoint.previous_secret_ciphertext)
            ? await again(endpoint.previous_secret_ciphertext)
            : endpoint.previous_secret_ciphertext
          : null,
      previous_secret_expires_at: previousLive ? endpoint.previous_secret_expires_at : null,
      revision: endpoint.revision + 1,
    };
  };
  for await (const page of scanWebhookEndpoints(deps.table)) {
    for (const scanned of page) {
      report.endpoints++;
      let endpoint: WebhookEndpointRecord | undefined = scanned;
      let done = false;
      for (let attempt = 1; endpoint && attempt <= CHANGE_ATTEMPTS && !done; attempt++) {
        const next: WebhookEndpointRecord | undefined = await resealed(endpoint);
        if (!next) {
          done = true;
          break;
        }
        try {
          await resealWebhookEndpoint(deps.table, endpoint, next);
          report.resealed++;
          endpoint = next;
          done = true;
        } catch (error) {
          if (!(error instanceof EndpointChanged)) throw error;
          endpoint = await readEndpoint(deps.table, scanned.id);
        }
      }
      if (!done && endpoint) report.skipped.push(scanned.id);
      if (endpoint) {
        count(endpoint.secret_ciphertext);
        count(endpoint.previous_secret_ciphertext);
      }
    }
  }
  return report;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createWebhookEndpoint: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...webhooksAccess.insertWebhookEndpoint,
    ],
    webhookKeySet: true,
  },
  listWebhookEndpoints: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...webhooksAccess.listWebhookEndpointPage,
    ],
    webhookKeySet: true,
  },
  getWebhookEndpoint: {
    table: [
      oneStatement(tokensAccess.findToken, webhooksAccess.getWebhookEndpoint),
      ...tokensAccess.findAccessToken,
    ],
    webhookKeySet: true,
  },
  updateWebhookEndpoint: {
    table: [
      oneStatement(tokensAccess.findToken, webhooksAccess.getWebhookEndpoint),
      ...tokensAccess.findAccessToken,
      ...webhooksAccess.replaceWebhookEndpoint,
    ],
    webhookKeySet: true,
  },
  resetWebhookEndpointSecret: {
    table: [
      oneStatement(tokensAccess.findToken, webhooksAccess.getWebhookEndpoint),
      ...tokensAccess.findAccessToken,
      ...webhooksAccess.replaceWebhookEndpointInPlace,
    ],
    webhookKeySet: true,
  },
  deleteWebhookEndpoint: {
    table: [
      oneStatement(tokensAccess.findToken, webhooksAccess.getWebhookEndpoint),
      ...tokensAccess.findAccessToken,
      ...webhooksAccess.softDeleteWebhookEndpoint,
    ],
  },
});
