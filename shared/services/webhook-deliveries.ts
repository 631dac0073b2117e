/**
 * Webhook deliveries as the API shows them: the attempts of the caller's organizations' webhook
 * events (List Webhook Deliveries), and a new delivery round of one event (Redeliver).
 */
import {
  DELIVERY_PAGE_DEPTH,
  access as deliveriesAccess,
  listDeliveryPage,
  startRound,
} from '../data/deliveries.ts';
import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { parseListSorting } from '../data/listing.ts';
import type { DeliveryAttemptRecord, WebhookEventRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError, ResourceNotFound, type ValidationIssue } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type {
  ListResourceWebhookDelivery,
  ListWebhookDeliveriesQuery,
  WebhookDelivery,
  WebhookEvent,
} from '../generated/api-types.ts';
import { currentTelemetry } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { pageWindow, pagination } from './paging.ts';

/** Filters of the hosted service that no key of the delivery lists can answer. */
const UNSUPPORTED = {
  start_timestamp: 'Filtering deliveries by time is not supported.',
  end_timestamp: 'Filtering deliveries by time is not supported.',
  query: 'Searching deliveries is not supported.',
  http_code_class: 'Filtering deliveries by HTTP status class is not supported.',
  event_type: 'Filtering deliveries by event type is not supported.',
} as const;

/**
 * Event payloads shown in one page, in bytes: beyond it a payload is `null`, so that a page of 100
 * attempts of events about the largest objects (a product at every limit is about 150 kB) still
 * fits a Lambda response (6 MB), and its read of the payloads (each stored once, in its event's
 * outbox item, read back for the page) stays about 250 read units.
 */
export const PAGE_PAYLOAD_BUDGET = 1_000_000;

/** A webhook event as the API shows it (`payload` null when not shown). */
export function presentWebhookEvent(event: WebhookEventRecord, payload: string | null): WebhookEvent {
  return {
    created_at: event.created_at,
    modified_at: event.modified_at,
    id: event.id,
    last_http_code: event.last_http_code,
    succeeded: event.status === 'succeeded' ? true : event.status === 'failed' ? false : null,
    skipped: event.status === 'skipped',
    api_version: '2026-10',
    payload,
    type: event.type,
    is_archived: false,
  };
}

export function presentWebhookDelivery(
  attempt: DeliveryAttemptRecord,
  payload: string | null,
): WebhookDelivery {
  return {
    created_at: attempt.created_at,
    modified_at: null,
    id: attempt.id,
    succeeded: attempt.succeeded,
    http_code: attempt.http_code,
    response: attempt.response,
    webhook_event: presentWebhookEvent(attempt.webhook_event, payload),
  };
}

/**
 * A page of the delivery attempts of the caller's organizations (or of the endpoints `endpoint_id`
 * names: an endpoint of another organization matches nothing), newest first unless `sorting` says
 * otherwise, ties by ascending attempt id.
 */
export async function listWebhookDeliveries(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListWebhookDeliveriesQuery,
): Promise<ListResourceWebhookDelivery> {
  const refused = (Object.keys(UNSUPPORTED) as (keyof typeof UNSUPPORTED)[])
    .filter((name) => query[name] !== undefined && query[name] !== null)
    .map(
      (name): ValidationIssue => ({
        loc: ['query', name],
        msg: UNSUPPORTED[name],
        type: 'value_error',
        input: query[name],
      }),
    );
  if (refused.length > 0) throw new PolarRequestValidationError(refused);
  const window = pageWindow(query);
  if (window.offset + window.limit > DELIVERY_PAGE_DEPTH) {
    throw new PolarRequestValidationError([
      {
        loc: ['query', 'page'],
        msg: `Only the newest ${DELIVERY_PAGE_DEPTH} attempts of a list can be paged (page × limit ≤ ${DELIVERY_PAGE_DEPTH}); narrow it with endpoint_id or succeeded, or reverse the sorting.`,
        type: 'value_error',
        input: query.page,
      },
    ]);
  }
  const endpointIds = query.endpoint_id ? [...new Set(query.endpoint_id.map(normalizeId))] : undefined;
  const page = await listDeliveryPage(
    deps.table,
    principal.organizationIds,
    {
      ...(endpointIds ? { endpointIds } : {}),
      ...(typeof query.succeeded === 'boolean' ? { succeeded: query.succeeded } : {}),
    },
    parseListSorting<'created_at'>(query.sorting, ['-created_at']),
    window.offset,
    window.limit,
    deps.now(),
    PAGE_PAYLOAD_BUDGET,
  );
  const items = page.items.map(({ attempt, payload }) => presentWebhookDelivery(attempt, payload));
  return { items, pagination: pagination(page.total, window) };
}

/**
 * Starts a new delivery round of a webhook event of one of the caller's organizations: one
 * transaction (another organization's event and an unknown or expired one are the same 404) that
 * also records the request, from which the relay queues the round's first attempt. The deliverer
 * sends it whatever became of the event before, unless its endpoint is deleted or disabled by then
 * (skipped).
 */
export async function redeliverWebhookEvent(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<null> {
  const started = await startRound(
    deps.table,
    normalizeId(id),
    principal.organizationIds,
    deps.now().toISOString(),
    currentTelemetry()?.requestId ?? null,
  );
  if (!started) throw new ResourceNotFound();
  return null;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  listWebhookDeliveries: {
    table: [...tokensAccess.findToken, ...tokensAccess.findAccessToken, ...deliveriesAccess.listDeliveryPage],
  },
  redeliverWebhookEvent: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...deliveriesAccess.startRound,
    ],
  },
});
