/**
 * The delivery pipeline's items: which endpoints an event goes to, the webhook event of each (event,
 * endpoint) pair, its attempts, and the endpoint's delivery health. Every write is conditional, so a
 * relay or deliverer that runs twice over the same input (a crash, a timeout, SQS delivering a message
 * twice) changes nothing twice.
 */
import { randomUUID } from 'node:crypto';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { logError } from '../observability/telemetry.ts';
import { EVENT_RETENTION_DAYS } from '../webhooks/events.ts';
import { keyId, readMany } from './catalog.ts';
import { createOnly, run, type Table, type TransactItem, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { countShard, type SortCriterion } from './listing.ts';
import {
  type DeliveryAttemptRecord,
  item,
  record,
  type WebhookEndpointRecord,
  type WebhookEventRecord,
} from './records.ts';
import { attr, type Key, keys, LIST_COUNT_PREFIX, partitions } from './table.ts';
import { endpointReplacement, webhookEndpointRecord } from './webhooks.ts';

const expiresAt = (at: string) => Math.floor(Date.parse(at) / 1000) + EVENT_RETENTION_DAYS * 86_400;

/** Records a webhook event unless it exists: false when an earlier run recorded it already. */
export async function recordWebhookEvent(table: Table, event: WebhookEventRecord): Promise<boolean> {
  try {
    await run(() =>
      table.doc.send(
        new PutCommand(
          createOnly(
            table,
            item(
              { ...keys.webhookEvent(event.id), [attr.ttl]: expiresAt(event.created_at) },
              'webhook_event',
              event,
            ),
          ),
        ),
      ),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/**
 * A webhook event, its endpoint and its payload, in one strongly consistent batch: the payload from
 * the event's outbox item (`eventKey`, which the queue message names; when a message does not, it
 * is read after the event, one more round trip), or from the event itself when it holds its own
 * (written before the outbox kept it). No payload: the outbox item is past its retention.
 */
export async function deliveryState(
  table: Table,
  webhookEventId: string,
  endpointId: string,
  eventKey?: Key,
): Promise<{ event?: WebhookEventRecord; endpoint?: WebhookEndpointRecord; payload?: string }> {
  const wanted = [keys.webhookEvent(webhookEventId), keys.webhookEndpoint(endpointId)];
  if (eventKey) wanted.push({ PK: eventKey.PK, SK: eventKey.SK });
  const found = await readMany(table, wanted);
  const event = found.get(keyId(keys.webhookEvent(webhookEventId)));
  const endpoint = found.get(keyId(keys.webhookEndpoint(endpointId)));
  const record = event ? webhookEventRecord(event) : undefined;
  let payload = record?.payload;
  const outboxKey = record?.event_key;
  if (payload === undefined && outboxKey) {
    const outbox =
      found.get(keyId(outboxKey)) ??
      (eventKey && keyId(eventKey) === keyId(outboxKey)
        ? undefined
        : (await readMany(table, [outboxKey])).get(keyId(outboxKey)));
    payload = outbox?.payload as string | undefined;
  }
  return {
    ...(record ? { event: record } : {}),
    ...(endpoint ? { endpoint: webhookEndpointRecord(endpoint) } : {}),
    ...(payload !== undefined ? { payload } : {}),
  };
}

/** An endpoint read again (strongly consistent) after a change of it won the race against the deliverer's. */
export async function rereadEndpoint(
  table: Table,
  endpointId: string,
): Promise<WebhookEndpointRecord | undefined> {
  const stored = (await readMany(table, [keys.webhookEndpoint(endpointId)])).get(
    keyId(keys.webhookEndpoint(endpointId)),
  );
  return stored ? webhookEndpointRecord(stored) : undefined;
}

/** A webhook event by id (Redeliver), strongly consistent. */
export async function getWebhookEvent(table: Table, id: string): Promise<WebhookEventRecord | undefined> {
  const found = await readMany(table, [keys.webhookEvent(id)]);
  const stored = found.get(keyId(keys.webhookEvent(id)));
  return stored ? webhookEventRecord(stored) : undefined;
}

/**
 * The delivery log: every attempt listed per organization (`LIST#DELIVERY#<org>`) and per endpoint
 * (`LIST#DELIVERY#<org>#<endpoint>`), each also in a view by outcome (`…#succeeded=true|false`).
 *
 * - **Sharded.** Each list is `DELIVERY_LIST_SHARDS` partitions (`…#S<k>`, k from the attempt id),
 *   so one tenant's attempts spread their writes; a page merges the shards (`mergedEntries`).
 * - **Small entries.** An entry holds keys only: the attempt's (`WHEVENT#<id>` / `ATTEMPT#…`) and
 *   its event's outbox item (where the payload is stored, once), with the payload's size. A page's
 *   attempts and payloads are read back in one batch, bounded by the page.
 * - **Counts by day, outside the transaction.** Each shard keeps one count item per UTC day
 *   (`#COUNT#<yyyy-mm-dd>`), raised by a plain `ADD` after the attempt's transaction: no transaction
 *   holds a count, so none conflicts on one. A list shows the attempts of its last
 *   `DELIVERY_LOG_DAYS` whole days (entries by a key range, counts by the same days): nothing is
 *   taken off when an entry expires, so TTL needs no bookkeeping (entries and counts expire a day
 *   after they leave that window).
 */
export const DELIVERY_LIST_SHARDS = 4;
/** Whole UTC days of attempts a list shows (the day of an attempt and this many after). */
export const DELIVERY_LOG_DAYS = EVENT_RETENTION_DAYS;
/** `page × limit` a delivery page may reach (a deeper page is refused: its read would grow with it). */
export const DELIVERY_PAGE_DEPTH = 2_000;

const DAY_MS = 86_400_000;
const ENTRY_PREFIX = 'at#';
const dayOf = (at: string | Date) => new Date(at).toISOString().slice(0, 10);
/** Entries and counts of the day of `at` expire (TTL) a day after the list stops showing them. */
const deliveryLogTtl = (at: string) => (Math.floor(Date.parse(at) / DAY_MS) + DELIVERY_LOG_DAYS + 2) * 86_400;
/** The first day a list shows at `now`. */
const firstShownDay = (now: Date) => dayOf(new Date(now.getTime() - DELIVERY_LOG_DAYS * DAY_MS));

export const deliveryShard = (attemptId: string) => countShard(attemptId) % DELIVERY_LIST_SHARDS;

export const endpointDeliveriesOwner = (organizationId: string, endpointId: string) =>
  `${organizationId}#${endpointId}`;

/** The partition of one shard of a delivery list (an organization's or endpoint's; a view by outcome). */
export const deliveryListPartition = (owner: string, shard: number, succeeded?: boolean) =>
  `${partitions.deliveryList}${owner}${succeeded === undefined ? '' : `#succeeded=${succeeded}`}#S${shard}`;

/** The four lists an attempt is in, as partitions of its shard. */
const attemptPartitions = (attempt: DeliveryAttemptRecord): string[] => {
  const shard = deliveryShard(attempt.id);
  const owners = [
    attempt.organization_id,
    endpointDeliveriesOwner(attempt.organization_id, attempt.endpoint_id),
  ];
  return owners.flatMap((owner) => [
    deliveryListPartition(owner, shard),
    deliveryListPartition(owner, shard, attempt.succeeded),
  ]);
};

/** A delivery list entry: where the attempt and its payload are. */
interface DeliveryEntry {
  PK: string;
  SK: string;
  created_at: string;
  id: string;
  webhook_event_id: string;
  round: number;
  attempt: number;
  /** The outbox item holding the payload (absent for an attempt of a webhook event that holds its own). */
  event_key?: Key;
  payload_bytes: number;
}

/** The attempt's list entries (four small puts, for its transaction). */
function entryWrites(table: Table, attempt: DeliveryAttemptRecord, payloadBytes: number): TransactItem[] {
  const eventKey = attempt.webhook_event.event_key;
  return attemptPartitions(attempt).map((PK) => ({
    Put: {
      TableName: table.name,
      Item: {
        PK,
        SK: `${ENTRY_PREFIX}${attempt.created_at}#${attempt.id}`,
        entity: 'delivery_entry',
        created_at: attempt.created_at,
        id: attempt.id,
        webhook_event_id: attempt.webhook_event_id,
        round: attempt.round,
        attempt: attempt.attempt,
        ...(eventKey ? { event_key: eventKey } : {}),
        payload_bytes: payloadBytes,
        [attr.ttl]: deliveryLogTtl(attempt.created_at),
      },
    },
  }));
}

/**
 * Counts the attempt in its four lists' day counts: plain updates, after its transaction (a crash
 * between the two leaves one attempt uncounted, never one counted twice or a transaction refused).
 */
async function countAttempt(table: Table, attempt: DeliveryAttemptRecord): Promise<void> {
  await Promise.all(
    attemptPartitions(attempt).map((PK) =>
      run(() =>
        table.doc.send(
          new UpdateCommand({
            TableName: table.name,
            Key: { PK, SK: `${LIST_COUNT_PREFIX}${dayOf(attempt.created_at)}` },
            UpdateExpression: 'ADD entry_count :one SET #ttl = if_not_exists(#ttl, :ttl)',
            ExpressionAttributeNames: { '#ttl': attr.ttl },
            ExpressionAttributeValues: { ':one': 1, ':ttl': deliveryLogTtl(attempt.created_at) },
          }),
        ),
      ),
    ),
  );
}

/**
 * An attempt written before the sharded lists (its payload in its own record), entered in them: its
 * four entries, the first only if absent (a migration run twice enters it once), and its four day
 * counts, in one transaction (`shared/data/delivery-log-migration.ts`; an operator's one-off run,
 * one attempt at a time, so its counts in a transaction conflict with nothing of its own).
 */
export function legacyEntryWrites(table: Table, attempt: DeliveryAttemptRecord): TransactItem[] {
  const puts = entryWrites(table, attempt, Buffer.byteLength(attempt.webhook_event.payload ?? '', 'utf8'));
  const [first, ...rest] = puts;
  if (!first || !('Put' in first) || !first.Put) throw new Error('an attempt has four entries');
  return [
    { Put: { ...first.Put, ConditionExpression: 'attribute_not_exists(PK)' } },
    ...rest,
    ...attemptPartitions(attempt).map(
      (PK): TransactItem => ({
        Update: {
          TableName: table.name,
          Key: { PK, SK: `${LIST_COUNT_PREFIX}${dayOf(attempt.created_at)}` },
          UpdateExpression: 'ADD entry_count :one SET #ttl = if_not_exists(#ttl, :ttl)',
          ExpressionAttributeNames: { '#ttl': attr.ttl },
          ExpressionAttributeValues: { ':one': 1, ':ttl': deliveryLogTtl(attempt.created_at) },
        },
      }),
    ),
  ];
}

/** One shard's entries read so far, and where its next read starts (none: read to its end). */
interface ShardRead {
  pk: string;
  entries: DeliveryEntry[];
  next?: Record<string, unknown>;
}

/** Query of a shard's shown entries from `next`, newest first (or oldest first), `limit` of them. */
async function readShard(
  table: Table,
  shard: ShardRead,
  from: string,
  ascending: boolean,
  limit: number,
): Promise<void> {
  const result = await run(() =>
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
        ExpressionAttributeValues: {
          ':pk': shard.pk,
          ':from': `${ENTRY_PREFIX}${from}`,
          ':to': `${ENTRY_PREFIX}~`,
        },
        ScanIndexForward: ascending,
        ConsistentRead: true,
        Limit: limit,
        ...(shard.next ? { ExclusiveStartKey: shard.next } : {}),
      }),
    ),
  );
  shard.entries.push(...((result.Items ?? []) as DeliveryEntry[]));
  shard.next = result.LastEvaluatedKey;
}

/**
 * The first `wanted` entries of several shards in the page's order (time, then ascending attempt id).
 * Each shard is read in chunks of about its share; a shard is read further only while its last
 * entry read is not past the `wanted`-th entry merged (a tie in time counts as not past: its
 * unread entries of that instant may come first). So the read is about `wanted` entries plus one
 * chunk per shard, whatever the lists' size.
 */
async function mergedEntries(
  table: Table,
  pks: readonly string[],
  from: string,
  ascending: boolean,
  wanted: number,
): Promise<DeliveryEntry[]> {
  const order = (a: DeliveryEntry, b: DeliveryEntry) =>
    (a.created_at === b.created_at ? 0 : a.created_at < b.created_at === ascending ? -1 : 1) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const chunk = Math.min(wanted, Math.ceil((wanted * 1.25) / pks.length) + 4);
  const shards: ShardRead[] = pks.map((pk) => ({ pk, entries: [] }));
  let pending: ShardRead[] = shards;
  let first = true;
  for (;;) {
    // One shard after another: a failing read stops the page there (nothing more read for a 503),
    // and the calls keep one order (the fault suite's cases address each by its position).
    for (const shard of pending) await readShard(table, shard, from, ascending, first ? chunk : wanted);
    first = false;
    const merged = shards.flatMap((shard) => shard.entries).sort(order);
    const last = merged[wanted - 1];
    pending = shards.filter((shard) => {
      if (!shard.next) return false;
      if (!last) return true;
      const tail = shard.entries[shard.entries.length - 1];
      return !tail || tail.created_at === last.created_at || tail.created_at < last.created_at === ascending;
    });
    if (pending.length === 0) return merged.slice(0, wanted);
  }
}

/** The day counts a list shows at `now`, summed over its shards: one Query per shard. */
async function shownCount(table: Table, pks: readonly string[], now: Date): Promise<number> {
  // One shard after another, as the entries (`mergedEntries`).
  const counts: number[] = [];
  for (const pk of pks) {
    counts.push(
      await (async () => {
        let total = 0;
        let next: Record<string, unknown> | undefined;
        do {
          const result = await run(() =>
            table.doc.send(
              new QueryCommand({
                TableName: table.name,
                KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
                ExpressionAttributeValues: {
                  ':pk': pk,
                  ':from': `${LIST_COUNT_PREFIX}${firstShownDay(now)}`,
                  ':to': `${LIST_COUNT_PREFIX}~`,
                },
                ConsistentRead: true,
                ...(next ? { ExclusiveStartKey: next } : {}),
              }),
            ),
          );
          for (const count of result.Items ?? []) total += Number(count.entry_count ?? 0);
          next = result.LastEvaluatedKey;
        } while (next);
        return total;
      })(),
    );
  }
  return counts.reduce((a, b) => a + b, 0);
}

/** An attempt as a page shows it: its record and, within the page's budget, its event's payload. */
export interface ListedAttempt {
  attempt: DeliveryAttemptRecord;
  payload: string | null;
}

/**
 * A page of delivery attempts: of these organizations, or only of these endpoints of them (their
 * own lists: an endpoint of another organization has no list in the caller's), or only those that
 * succeeded or failed (a view). Reads: each list shard's day counts; then, unless the page is past
 * the end, the merged entries (`offset + limit`, see `mergedEntries`); then one batch of the page's
 * attempts and of the outbox items of its payloads while their sizes stay within `payloadBudget`
 * bytes (beyond it a payload is null).
 */
export async function listDeliveryPage(
  table: Table,
  organizationIds: readonly string[],
  filter: { endpointIds?: readonly string[]; succeeded?: boolean },
  criteria: readonly SortCriterion<'created_at'>[],
  offset: number,
  limit: number,
  now: Date,
  payloadBudget: number,
): Promise<{ items: ListedAttempt[]; total: number }> {
  const owners = filter.endpointIds
    ? organizationIds.flatMap(
        (org) => filter.endpointIds?.map((endpoint) => endpointDeliveriesOwner(org, endpoint)) ?? [],
      )
    : organizationIds;
  const pks = owners.flatMap((owner) =>
    Array.from({ length: DELIVERY_LIST_SHARDS }, (_, shard) =>
      deliveryListPartition(owner, shard, filter.succeeded),
    ),
  );
  if (pks.length === 0) return { items: [], total: 0 };
  const total = await shownCount(table, pks, now);
  if (offset >= total) return { items: [], total };
  const ascending = criteria[0] ? !criteria[0].descending : false;
  const entries = (await mergedEntries(table, pks, firstShownDay(now), ascending, offset + limit)).slice(
    offset,
  );
  let budget = payloadBudget;
  const withPayload = entries.map((entry) => {
    budget -= entry.payload_bytes;
    return budget >= 0;
  });
  const attemptKeys = entries.map((entry) =>
    keys.deliveryAttempt(entry.webhook_event_id, entry.round, entry.attempt),
  );
  const eventKeys = new Map<string, Key>();
  entries.forEach((entry, i) => {
    if (withPayload[i] && entry.event_key) eventKeys.set(keyId(entry.event_key), entry.event_key);
  });
  const found = await readMany(table, [...attemptKeys, ...eventKeys.values()]);
  const items = entries.flatMap((entry, i): ListedAttempt[] => {
    const stored = found.get(keyId(attemptKeys[i] as Key));
    if (!stored) return [];
    const attempt = record<DeliveryAttemptRecord>(stored);
    const outbox = entry.event_key ? found.get(keyId(entry.event_key)) : undefined;
    // An attempt of a webhook event written before the payload moved to the outbox carries it;
    // an outbox item past its retention is gone (null).
    const payload = withPayload[i]
      ? ((outbox?.payload as string | undefined) ?? attempt.webhook_event.payload ?? null)
      : null;
    return [{ attempt, payload }];
  });
  return { items, total };
}

/** The condition that `event` is still as the caller read it: same round, same number of attempts. */
const unchanged = {
  ConditionExpression: 'attribute_exists(PK) AND #round = :round AND attempts = :attempts',
  names: { '#round': 'round', '#status': 'status' },
};

/** What an attempt did to its endpoint: the endpoint as read, and as it is to be written. */
export interface EndpointChange {
  before: WebhookEndpointRecord;
  after: WebhookEndpointRecord;
}

/**
 * What recording an attempt came to: recorded; the webhook event had moved on (another deliverer
 * recorded this attempt first: nothing written); or the endpoint changed since it was read (nothing
 * written: read it again and decide its change again).
 */
export type RecordOutcome = 'recorded' | 'event-changed' | 'endpoint-changed';

/** The webhook event's new state, conditioned on it being as read (`unchanged`). */
function eventUpdate(table: Table, before: WebhookEventRecord, after: WebhookEventRecord) {
  return {
    TableName: table.name,
    Key: keys.webhookEvent(before.id),
    UpdateExpression: 'SET #status = :status, attempts = :next, last_http_code = :code, modified_at = :now',
    ConditionExpression: unchanged.ConditionExpression,
    ExpressionAttributeNames: unchanged.names,
    ExpressionAttributeValues: {
      ':round': before.round,
      ':attempts': before.attempts,
      ':next': after.attempts,
      ':status': after.status,
      ':code': after.last_http_code,
      ':now': after.modified_at,
    },
  };
}

/**
 * One attempt and what it did: the webhook event's new state (conditioned on the event being as
 * read, so of two deliverers handling the same message only one records), the attempt (its
 * webhook event without the payload, which stays in the outbox item) with its four small list
 * entries and, when the attempt changes the endpoint's health (its failure count, or disabling it),
 * the endpoint and its own list entries conditioned on its revision: all in one transaction. Then
 * the attempt is counted in its lists' day counts (`countAttempt`, plain updates: a failure there is
 * logged, the attempt stays recorded).
 */
export async function recordAttempt(
  table: Table,
  before: WebhookEventRecord,
  attempt: DeliveryAttemptRecord,
  endpoint?: EndpointChange,
  payloadBytes = 0,
): Promise<RecordOutcome> {
  const after = attempt.webhook_event;
  // The payload is stored once, in the event's outbox item; only an event that still holds its own
  // (written before the outbox kept it) passes it on to its attempts.
  const { payload, ...withoutPayload } = after;
  const stored: DeliveryAttemptRecord = {
    ...attempt,
    webhook_event: after.event_key ? withoutPayload : after,
  };
  const endpointWrites = endpoint ? endpointReplacement(table, endpoint.before, endpoint.after) : [];
  try {
    await transact(table, [
      { Update: eventUpdate(table, before, after) },
      // The endpoint's own item second: its cancellation reason is the transaction's second.
      ...endpointWrites,
      {
        Put: createOnly(
          table,
          item(
            {
              ...keys.deliveryAttempt(before.id, attempt.round, attempt.attempt),
              [attr.ttl]: deliveryLogTtl(attempt.created_at),
            },
            'delivery_attempt',
            stored,
          ),
        ),
      },
      ...entryWrites(table, attempt, payloadBytes || Buffer.byteLength(payload ?? '', 'utf8')),
    ]);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    if (error.reasons[0] === 'ConditionalCheckFailed') return 'event-changed';
    if (endpoint && error.reasons[1] === 'ConditionalCheckFailed') return 'endpoint-changed';
    throw error;
  }
  try {
    await countAttempt(table, attempt);
  } catch (error) {
    logError('webhook delivery attempt recorded but not counted in its lists', {
      webhook_event_id: attempt.webhook_event_id,
      name: (error as Error).name,
    });
  }
  return 'recorded';
}

/**
 * The webhook event's new state alone, when the attempt's transaction failed for another reason
 * than a condition (a throttle that outlasted the retries, a list partition that cannot grow): the
 * POST went out, so the event must not be sent again as if it had not. The attempt is then missing
 * from the delivery log (logged by the caller), never delivered twice for that reason.
 * False: the event had moved on (another deliverer recorded it).
 */
export async function recordEventState(
  table: Table,
  before: WebhookEventRecord,
  after: WebhookEventRecord,
): Promise<boolean> {
  try {
    await run(() => table.doc.send(new UpdateCommand(eventUpdate(table, before, after))));
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** Marks a webhook event skipped (its endpoint is gone or disabled), unless it moved on meanwhile. */
export async function skipWebhookEvent(table: Table, event: WebhookEventRecord, now: string): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.webhookEvent(event.id),
          UpdateExpression: 'SET #status = :skipped, modified_at = :now',
          ConditionExpression: unchanged.ConditionExpression,
          ExpressionAttributeNames: unchanged.names,
          ExpressionAttributeValues: {
            ':skipped': 'skipped',
            ':now': now,
            ':round': event.round,
            ':attempts': event.attempts,
          },
        }),
      ),
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/**
 * Starts a new delivery round of a webhook event (Redeliver): pending again, no attempts yet, and,
 * in the same transaction, the request's redelivery item, whose stream record the relay turns into
 * the round's first queue message (`redeliveryMessages`). So the round and its message are one
 * write: there is no round started that nothing will send.
 *
 * False when the event does not exist in `organizationIds` or is past its retention (TTL removes
 * items some time after they expire; until then they must not answer).
 */
export async function startRound(
  table: Table,
  id: string,
  organizationIds: readonly string[],
  now: string,
  correlationId: string | null,
): Promise<boolean> {
  if (organizationIds.length === 0) return false;
  const orgValues = Object.fromEntries(organizationIds.map((org, i) => [`:org${i}`, org]));
  const epoch = Math.floor(Date.parse(now) / 1000);
  // The SDK retries a transaction whose answer was lost, even when it was applied: the request's
  // own mark makes that retry fail its condition and find the round it started, instead of
  // starting another (DynamoDB also dedupes it by the SDK's ClientRequestToken, for 10 minutes).
  const request = randomUUID();
  try {
    await transact(table, [
      {
        Update: {
          TableName: table.name,
          Key: keys.webhookEvent(id),
          UpdateExpression:
            'SET #round = #round + :one, attempts = :zero, #status = :pending, modified_at = :now, #request = :request',
          ConditionExpression: `attribute_exists(PK) AND #ttl > :epoch AND organization_id IN (${Object.keys(orgValues).join(', ')}) AND (attribute_not_exists(#request) OR #request <> :request)`,
          ExpressionAttributeNames: {
            '#round': 'round',
            '#status': 'status',
            '#ttl': attr.ttl,
            '#request': ROUND_REQUEST,
          },
          ExpressionAttributeValues: {
            ':epoch': epoch,
            ':one': 1,
            ':zero': 0,
            ':pending': 'pending',
            ':now': now,
            ':request': request,
            ...orgValues,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      {
        Put: {
          TableName: table.name,
          Item: {
            ...keys.redelivery(id, request),
            entity: 'redelivery',
            webhook_event_id: id,
            request,
            created_at: now,
            correlation_id: correlationId,
            // It only has to reach the stream (kept 24 hours); a day later TTL removes it.
            [attr.ttl]: epoch + 86_400,
          },
        },
      },
    ]);
    return true;
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    return error.item?.[ROUND_REQUEST] === request;
  }
}

/** A Redeliver request as its stream record carries it (`keys.redelivery`). */
export interface Redelivery {
  webhook_event_id: string;
  request: string;
  correlation_id?: string | null;
}

/**
 * The queue messages of Redeliver requests (the relay): each names its event's current round, if
 * that round is still the one the request started; a request a later one superseded sends nothing,
 * the later one's own record sends that round; with the event's organization (the message's tenant
 * in the fair queue, not part of its body). One strongly consistent batch read.
 */
export async function redeliveryMessages(
  table: Table,
  redeliveries: readonly Redelivery[],
): Promise<
  { webhook_event_id: string; endpoint_id: string; round: number; event_key?: Key; organization_id: string }[]
> {
  if (redeliveries.length === 0) return [];
  // One key per event (a batch read refuses a key twice): two requests for one event can share a batch.
  const ids = [...new Set(redeliveries.map((r) => r.webhook_event_id))];
  const found = await readMany(table, ids.map(keys.webhookEvent));
  return redeliveries.flatMap((r) => {
    const stored = found.get(keyId(keys.webhookEvent(r.webhook_event_id)));
    if (!stored || stored[ROUND_REQUEST] !== r.request) return [];
    const event = webhookEventRecord(stored);
    return [
      {
        webhook_event_id: event.id,
        endpoint_id: event.endpoint_id,
        round: event.round,
        ...(event.event_key ? { event_key: event.event_key } : {}),
        organization_id: event.organization_id,
      },
    ];
  });
}

/** The attribute naming the Redeliver request that started the event's current round. */
const ROUND_REQUEST = 'round_request';

/** A stored webhook event as a record (without the mark of the request that started its round). */
function webhookEventRecord(stored: Record<string, unknown>): WebhookEventRecord {
  const { [ROUND_REQUEST]: _, ...rest } = record<WebhookEventRecord & { [ROUND_REQUEST]?: string }>(stored);
  return rest;
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /**
   * Per list shard (the organization's, or an endpoint's; or their view by outcome): its day counts,
   * then its entries, both queries; then one batch of the page's attempts and their events' outbox
   * items (the payloads).
   */
  listDeliveryPage: [
    { actions: ['dynamodb:Query'], leadingKeys: ['deliveryList'] },
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent', 'event'] },
  ],
  /**
   * One transaction: the event's next delivery round (its organization one of the caller's) and the
   * request's redelivery item, from which the relay queues the round's first attempt.
   */
  startRound: [{ actions: ['dynamodb:UpdateItem', 'dynamodb:PutItem'], leadingKeys: ['webhookEvent'] }],
  /**
   * The relay: one webhook event per target (`recordWebhookEvent`); a Redeliver request's event
   * round, in one batch (`redeliveryMessages`).
   */
  relay: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent'] },
    { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEvent'] },
  ],
  /**
   * The deliverer: the webhook event, its endpoint and its outbox item (the payload) in one batch
   * (`deliveryState`; the endpoint again after a lost race, `rereadEndpoint`); one transaction of the
   * event's new state, the attempt, its list entries and, when the attempt changes the endpoint's
   * health, the endpoint and its list entries (`recordAttempt`, `skipWebhookEvent`); the lists' day
   * counts (`UpdateItem`); the event's state alone when that transaction fails (`recordEventState`).
   */
  deliver: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent', 'webhookEndpoint', 'event'] },
    {
      actions: ['dynamodb:PutItem'],
      leadingKeys: ['webhookEvent', 'deliveryList', 'webhookEndpoint', 'webhookEndpointList'],
    },
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['webhookEvent', 'deliveryList'] },
  ],
} as const satisfies DataAccess;
