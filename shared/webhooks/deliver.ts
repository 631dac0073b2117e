/**
 * The deliverer: one queue message is one attempt at one webhook event.
 *
 * At send time it re-reads the webhook event and its endpoint: a message whose event is settled (a
 * duplicate from SQS or from a re-run relay) or from an earlier delivery round sends nothing; an
 * endpoint deleted or disabled since the event was queued gets nothing (the event is marked skipped).
 * Otherwise it signs with every current secret (both keys each), sends once (`send.ts`), and records
 * the attempt with the event's new state in one conditional transaction. A failure is retried by
 * making the message visible again after the ladder's delay (`retry.ts`); Lambda deletes the message
 * when the handler does not report it as failed. A crash anywhere repeats at most the last attempt,
 * with the same `webhook-id`, which receivers dedupe.
 *
 * Endpoint health: a 410 Gone disables the endpoint at once (`endpoint_gone`); an event that exhausts
 * its retries adds one to the endpoint's `failure_count`, and a delivered event resets it; at
 * `FAILED_EVENTS_DISABLE_THRESHOLD` the endpoint is disabled (`too_many_failures`). The endpoint's
 * change is written in the attempt's own transaction, conditioned on the endpoint's revision (with
 * its list entries, as every endpoint change), so the count cannot be lost between the two.
 *
 * Isolation: an endpoint whose attempts keep getting no answer (or a 5xx) opens its circuit
 * (`circuit.ts`); while it is open, its messages take their attempt without a network call (recorded
 * as `not sent: circuit open`) and come back after the ladder's delay or the circuit's end, whichever
 * is later, so a dead or slow receiver costs the deliverer one probe per open period, not a deadline
 * per message.
 */
import {
  access as deliveriesAccess,
  deliveryState,
  type EndpointChange,
  recordAttempt,
  recordEventState,
  rereadEndpoint,
  skipWebhookEvent,
} from '../data/deliveries.ts';
import type { FunctionAccess } from '../data/grants.ts';
import type { DeliveryAttemptRecord, WebhookEndpointRecord, WebhookEventRecord } from '../data/records.ts';
import { ServiceUnavailable } from '../domain/errors.ts';
import { derivedId } from '../domain/ids.ts';
import { deliveryHeaders } from '../domain/webhook-signature.ts';
import { emitDeliveries, emitDeliveryLogFailure, logError, logInfo } from '../observability/telemetry.ts';
import { type DeliveryQueue, MAX_VISIBILITY_SECONDS, type QueueMessage } from '../queue/queue.ts';
import type { Dependencies } from '../runtime.ts';
import { signingSecrets } from '../services/webhook-endpoints.ts';
import { addressGuard, portAllowed } from './address-guard.ts';
import { type CircuitBreaker, circuitFailure, circuitWaitSeconds } from './circuit.ts';
import type { DeliveryMessage } from './relay.ts';
import { MAX_ATTEMPTS, retryDelaySeconds } from './retry.ts';
import { type Attempt, CIRCUIT_OPEN, sendAttempt } from './send.ts';

/** Events in a row that exhausted every retry before an endpoint is disabled (see docs/webhooks.md). */
export const FAILED_EVENTS_DISABLE_THRESHOLD = 5;
/** Tries at recording an attempt when changes of its endpoint keep winning the race. */
const ENDPOINT_CHANGE_TRIES = 3;

/**
 * The table, the clock, the webhook key set (to open the endpoint's secrets) and the address policy
 * (where a delivery may connect), as every function gets them; and the delivery queue.
 */
export interface DelivererDependencies extends Dependencies {
  queue: DeliveryQueue;
  random?: () => number;
  timeoutMs?: number;
  /** The endpoints' circuits (the handler keeps one per container); none: every attempt goes out. */
  circuit?: CircuitBreaker;
}

/** `deferred`: not sent (the endpoint's circuit is open), put back like a retry. */
export type Outcome = 'delivered' | 'retry' | 'deferred' | 'failed' | 'skipped' | 'ignored';

function parse(body: string): DeliveryMessage | undefined {
  try {
    const message = JSON.parse(body) as Partial<DeliveryMessage>;
    const key = message.event_key;
    const valid =
      typeof message.webhook_event_id === 'string' &&
      typeof message.endpoint_id === 'string' &&
      Number.isSafeInteger(message.round) &&
      (key === undefined || (typeof key?.PK === 'string' && typeof key?.SK === 'string'));
    return valid ? (message as DeliveryMessage) : undefined;
  } catch {
    return undefined;
  }
}

/** The webhook event after an attempt. */
function settle(before: WebhookEventRecord, attempt: Attempt, at: string): WebhookEventRecord {
  const attempts = before.attempts + 1;
  const status = attempt.delivered
    ? 'succeeded'
    : attempt.status === 410 || attempts >= MAX_ATTEMPTS
      ? 'failed'
      : 'pending';
  return { ...before, attempts, status, last_http_code: attempt.status, modified_at: at };
}

/**
 * What a settled event does to its endpoint (as it is now): a success clears its failure count, an
 * exhausted event raises it and disables it at the threshold, a 410 disables it. Undefined: no change.
 */
function health(
  endpoint: WebhookEndpointRecord,
  event: WebhookEventRecord,
  gone: boolean,
  at: string,
): WebhookEndpointRecord | undefined {
  if (endpoint.deleted_at !== null) return undefined;
  const next = (fields: Partial<WebhookEndpointRecord>) => ({
    ...endpoint,
    ...fields,
    revision: endpoint.revision + 1,
  });
  const disabled = (reason: 'endpoint_gone' | 'too_many_failures') =>
    endpoint.enabled ? { enabled: false, disabled_reason: reason, modified_at: at } : {};
  if (event.status === 'succeeded')
    return endpoint.failure_count > 0 ? next({ failure_count: 0 }) : undefined;
  if (gone) return endpoint.enabled ? next(disabled('endpoint_gone')) : undefined;
  if (event.status !== 'failed') return undefined;
  const failureCount = endpoint.failure_count + 1;
  return next({
    failure_count: failureCount,
    ...(failureCount >= FAILED_EVENTS_DISABLE_THRESHOLD ? disabled('too_many_failures') : {}),
  });
}

/**
 * Records the attempt with what it does to the endpoint, reading the endpoint again when one of its
 * changes won the race (a few times; then the attempt is recorded alone and the miss is logged).
 * `recorded` false: another deliverer recorded this attempt first, and its outcome stands.
 */
async function record(
  deps: DelivererDependencies,
  event: WebhookEventRecord,
  attempt: DeliveryAttemptRecord,
  endpoint: WebhookEndpointRecord,
  gone: boolean,
  payloadBytes: number,
): Promise<{ recorded: boolean; change?: EndpointChange }> {
  let current: WebhookEndpointRecord | undefined = endpoint;
  for (let tries = 1; ; tries++) {
    const after = current && health(current, attempt.webhook_event, gone, attempt.created_at);
    const change =
      current && after && tries <= ENDPOINT_CHANGE_TRIES ? { before: current, after } : undefined;
    if (after && !change) {
      logError('webhook endpoint health not recorded: changes of the endpoint kept winning', {
        endpointId: endpoint.id,
      });
    }
    const outcome = await recordAttempt(deps.table, event, attempt, change, payloadBytes);
    if (outcome === 'recorded') return change ? { recorded: true, change } : { recorded: true };
    if (outcome === 'event-changed') return { recorded: false };
    current = await rereadEndpoint(deps.table, endpoint.id);
  }
}

/**
 * The POST went out: record it, and if DynamoDB refuses its transaction (a throttle or conflict past
 * the retries, a list partition that cannot grow, a transaction it will not take: the translated
 * `ServiceUnavailable` or any SDK error, all of which applied nothing), settle the webhook event's
 * state alone (its own item, one small update), so that the message is not handled again as if
 * nothing had been sent: the receiver is never sent the same attempt again, fifteen times over,
 * because the log could not take it. The attempt is then missing from the delivery log, which is
 * logged and counted (`DeliveryLogFailures`). Anything else (a crash, a lost answer), or that update
 * failing too, goes up as before: the message comes back after its visibility timeout.
 */
async function recordOrSettle(
  deps: DelivererDependencies,
  event: WebhookEventRecord,
  attempt: DeliveryAttemptRecord,
  endpoint: WebhookEndpointRecord,
  gone: boolean,
  payloadBytes: number,
): Promise<{ recorded: boolean; change?: EndpointChange }> {
  try {
    return await record(deps, event, attempt, endpoint, gone, payloadBytes);
  } catch (error) {
    const refused =
      error instanceof ServiceUnavailable || (error as { $metadata?: unknown }).$metadata !== undefined;
    if (!refused) throw error;
    if (!(await recordEventState(deps.table, event, attempt.webhook_event))) throw error;
    logError(
      'webhook delivery attempt not logged: DynamoDB refused its transaction; the event was settled alone',
      {
        webhook_event_id: event.id,
        attempt: attempt.attempt,
        name: (error as Error).name,
      },
    );
    emitDeliveryLogFailure();
    return { recorded: true };
  }
}

/** What a batch did, for its metrics line: endpoints the deliverer disabled. */
export interface BatchStats {
  disabled: number;
}

/** One message: what happened to it. `retry` means: made visible again later, report it as failed. */
export async function deliverMessage(
  deps: DelivererDependencies,
  message: QueueMessage,
  stats: BatchStats = { disabled: 0 },
): Promise<Outcome> {
  const request = parse(message.body);
  if (!request) {
    logError('webhook delivery message unreadable: dropped', { messageId: message.messageId });
    return 'ignored';
  }
  const { event, endpoint, payload } = await deliveryState(
    deps.table,
    request.webhook_event_id,
    request.endpoint_id,
    request.event_key,
  );
  if (!event || event.round !== request.round || event.status !== 'pending') return 'ignored';
  const now = deps.now();
  if (!endpoint || endpoint.deleted_at !== null || !endpoint.enabled || payload === undefined) {
    // No payload: its outbox item passed its retention (a redelivery at the very end of it).
    if (payload === undefined)
      logInfo('webhook event past its retention: skipped', { webhook_event_id: event.id });
    await skipWebhookEvent(deps.table, event, now.toISOString());
    return 'skipped';
  }
  const admission = deps.circuit?.admit(endpoint.id) ?? { send: true, probe: false };
  let attempt: Attempt;
  if (admission.send) {
    const headers = deliveryHeaders(
      { id: event.id, timestamp: Math.floor(now.getTime() / 1000), payload },
      await signingSecrets(deps, endpoint, now),
    );
    attempt = await sendAttempt(endpoint.url, headers, payload, {
      guard: addressGuard(deps.webhooks.addresses),
      allowPort: (url) => portAllowed(url, deps.webhooks.addresses),
      ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}),
    });
    deps.circuit?.record(endpoint.id, circuitFailure(attempt), admission.probe);
  } else {
    // The circuit is open: the attempt is taken without a network call, so the ladder (and the
    // endpoint's health) go on as for an attempt that failed, and no message waits on this receiver.
    attempt = {
      status: null,
      durationMs: 0,
      snippet: '',
      error: CIRCUIT_OPEN,
      cause: 'circuit open',
      delivered: false,
    };
  }
  const at = deps.now().toISOString();
  const after = settle(event, attempt, at);
  const attemptRecord: DeliveryAttemptRecord = {
    id: derivedId('delivery-attempt', event.id, String(event.round), String(after.attempts)),
    webhook_event_id: event.id,
    endpoint_id: endpoint.id,
    organization_id: event.organization_id,
    type: event.type,
    created_at: at,
    round: event.round,
    attempt: after.attempts,
    succeeded: attempt.delivered,
    http_code: attempt.status,
    response: attempt.error ?? attempt.snippet,
    duration_ms: attempt.durationMs,
    webhook_event: after,
  };
  const { recorded, change } = await recordOrSettle(
    deps,
    event,
    attemptRecord,
    endpoint,
    attempt.status === 410,
    Buffer.byteLength(payload, 'utf8'),
  );
  // Another deliverer recorded this attempt of the same message first: its outcome stands.
  if (!recorded) return 'ignored';
  const disabled = Boolean(change?.before.enabled && !change.after.enabled);
  if (disabled) stats.disabled++;
  const outcome: Outcome =
    after.status === 'succeeded'
      ? 'delivered'
      : after.status === 'failed'
        ? 'failed'
        : admission.send
          ? 'retry'
          : 'deferred';
  // The change's correlation id with each attempt: one id from the API request to the receiver.
  logInfo('webhook delivery attempt', {
    correlation_id: event.correlation_id ?? null,
    webhook_event_id: event.id,
    endpoint_id: endpoint.id,
    type: event.type,
    round: event.round,
    attempt: after.attempts,
    http_code: attempt.status,
    // Why no status: a fixed word (`ECONNREFUSED`, `address refused`, `timeout after …`), never the
    // URL. The operator's line names the network fault; the delivery log only says `no answer`.
    ...(attempt.error ? { error: attempt.cause ?? attempt.error } : {}),
    duration_ms: attempt.durationMs,
    outcome,
    ...(admission.send ? {} : { circuit: 'open' }),
    ...(admission.send && admission.probe ? { circuit: 'half-open probe' } : {}),
    ...(disabled ? { endpoint_disabled: change?.after.disabled_reason } : {}),
  });
  if (outcome !== 'retry' && outcome !== 'deferred') return outcome;
  const ladder = retryDelaySeconds(after.attempts, deps.random) ?? 0;
  // Held back by the circuit: put back until it is over at the earliest.
  const circuitWait = admission.send ? 0 : circuitWaitSeconds(admission.waitMs, deps.random);
  await deps.queue.changeVisibility(
    message.receiptHandle,
    Math.min(Math.max(ladder, circuitWait), MAX_VISIBILITY_SECONDS),
  );
  return outcome;
}

/**
 * A batch, messages in parallel: the ids of the messages to report as failed (retries, and messages
 * whose handling failed: those come back after the queue's visibility timeout).
 */
export async function deliverBatch(
  deps: DelivererDependencies,
  messages: readonly QueueMessage[],
): Promise<string[]> {
  const stats: BatchStats = { disabled: 0 };
  const outcomes = await Promise.all(
    messages.map((message) =>
      deliverMessage(deps, message, stats).catch((error: unknown) => {
        logError('webhook delivery failed; the message comes back after its visibility timeout', {
          messageId: message.messageId,
          name: (error as Error).name,
          message: (error as Error).message,
        });
        return 'error' as const;
      }),
    ),
  );
  const sent = outcomes.filter((o) => o === 'delivered' || o === 'retry' || o === 'failed').length;
  const count = (outcome: Outcome) => outcomes.filter((o) => o === outcome).length;
  if (sent > 0) {
    emitDeliveries(sent, count('retry') + count('failed'), {
      succeeded: count('delivered'),
      failed: count('failed'),
      disabled: stats.disabled,
    });
  }
  return messages
    .filter((_, i) => outcomes[i] === 'retry' || outcomes[i] === 'deferred' || outcomes[i] === 'error')
    .map((m) => m.messageId);
}

/**
 * What this function may do (shared/data/grants.ts), keyed by its name: the grants of the data
 * functions it uses.
 */
export const functionAccess = (): Readonly<Record<string, FunctionAccess>> => ({
  'webhook-deliverer': {
    table: [
      // Opens the endpoint's signing secrets.
      ...deliveriesAccess.deliver,
    ],
    webhookKeySet: true,
  },
});
