/**
 * The delivery pipeline's items: which endpoints an event goes to, the webhook event of each (event,
 * endpoint) pair, its attempts, and the endpoint's delivery health. Every write is conditional, so a
 * relay or deliverer that runs twice over the same input (a crash, a timeout, SQS delivering a message
 * twice) changes nothing twice.
 */
import { randomUUID } from 'node:crypto';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { EVENT_RETENTION_DAYS } from '../webhooks/events.ts';
import { keyId, readMany } from './catalog.ts';
import { createOnly, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { countShard, type Listing, listedWrites, listPage, type SortCriterion } from './listing.ts';
import {
  type DeliveryAttemptRecord,
  item,
  record,
  type WebhookEndpointRecord,
  type WebhookEventRecord,
} from './records.ts';
import { attr, type Key, keys, LIST_COUNT_PREFIX } from './table.ts';
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

/** A webhook event and its endpoint, in one strongly consistent batch. */
export async function deliveryState(
  table: Table,
  webhookEventId: string,
  endpointId: string,
): Promise<{ event?: WebhookEventRecord; endpoint?: WebhookEndpointRecord }> {
  const found = await readMany(table, [keys.webhookEvent(webhookEventId), keys.webhookEndpoint(endpointId)]);
  const event = found.get(keyId(keys.webhookEvent(webhookEventId)));
  const endpoint = found.get(keyId(keys.webhookEndpoint(endpointId)));
  return {
    ...(event ? { event: webhookEventRecord(event) } : {}),
    ...(endpoint ? { endpoint: webhookEndpointRecord(endpoint) } : {}),
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
 * Delivery attempts, listed per organization (`LIST#DELIVERY#<org>`) and per endpoint
 * (`LIST#DELIVERY#<org>#<endpoint>`), each also in a view by outcome (`…#succeeded=true|false`):
 * one entry (sorted by `created_at`) and a count per list, written with the attempt. Entries expire
 * with the attempt (TTL); the relay takes each expiry from the stream off its list's count
 * (`forgetExpiredEntries`), so counts stay those of the entries there.
 */
export const organizationDeliveries: Listing<DeliveryAttemptRecord, 'created_at', 'succeeded'> = {
  partition: 'deliveryList',
  entity: 'delivery_entry',
  owner: (attempt) => attempt.organization_id,
  fields: { created_at: (attempt) => ({ time: attempt.created_at }) },
  views: { succeeded: (attempt) => String(attempt.succeeded) },
};
export const endpointDeliveries: Listing<DeliveryAttemptRecord, 'created_at', 'succeeded'> = {
  ...organizationDeliveries,
  owner: (attempt) => endpointDeliveriesOwner(attempt.organization_id, attempt.endpoint_id),
};
export const endpointDeliveriesOwner = (organizationId: string, endpointId: string) =>
  `${organizationId}#${endpointId}`;

/**
 * A page of delivery attempts: of these organizations, or only of these endpoints of them (their
 * own lists: an endpoint of another organization has no list in the caller's), or only those that
 * succeeded or failed (a view): the lists' counts, then `offset + limit` entries of each.
 */
export function listDeliveryPage(
  table: Table,
  organizationIds: readonly string[],
  filter: { endpointIds?: readonly string[]; succeeded?: boolean },
  criteria: readonly SortCriterion<'created_at'>[],
  offset: number,
  limit: number,
) {
  const owners = filter.endpointIds
    ? organizationIds.flatMap(
        (org) => filter.endpointIds?.map((endpoint) => endpointDeliveriesOwner(org, endpoint)) ?? [],
      )
    : organizationIds;
  return listPage(
    table,
    organizationDeliveries,
    owners,
    criteria,
    offset,
    limit,
    filter.succeeded === undefined ? {} : { succeeded: String(filter.succeeded) },
  );
}

/** The delivery list entries whose expiry (TTL) the relay counts: one per attempt and list. */
export const expiringEntryPrefix = 'created_at#';

/**
 * Takes entries DynamoDB's TTL removed off their list's count, once each: a tombstone (kept two days,
 * longer than the stream retries a batch) is created with the decrement in one transaction, so a
 * stream batch handled twice decrements nothing twice.
 */
export async function forgetExpiredEntries(table: Table, removed: readonly Key[], now: Date): Promise<void> {
  const tombstoneTtl = Math.floor(now.getTime() / 1000) + 2 * 86_400;
  await Promise.all(
    removed.map(async (key) => {
      const id = key.SK.slice(key.SK.lastIndexOf('#') + 1);
      try {
        await transact(table, [
          {
            Put: createOnly(table, {
              PK: key.PK,
              SK: `${EXPIRED_PREFIX}${key.SK}`,
              entity: 'delivery_entry_expired',
              [attr.ttl]: tombstoneTtl,
            }),
          },
          {
            Update: {
              TableName: table.name,
              Key: { PK: key.PK, SK: `${LIST_COUNT_PREFIX}${countShard(id)}` },
              UpdateExpression: 'ADD entry_count :minus',
              ExpressionAttributeValues: { ':minus': -1 },
            },
          },
        ]);
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
      }
    }),
  );
}

/** Tombstones of expired entries: beside the entries and counts, matched by neither's prefix. */
const EXPIRED_PREFIX = '#EXPIRED#';

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

/**
 * One attempt and what it did: the webhook event's new state (conditioned on the event being as
 * read, so of two deliverers handling the same message only one records), the attempt with its list
 * entries and, when the attempt changes the endpoint's health (its failure count, or disabling it),
 * the endpoint and its own list entries conditioned on its revision: all in one transaction.
 */
export async function recordAttempt(
  table: Table,
  before: WebhookEventRecord,
  attempt: DeliveryAttemptRecord,
  endpoint?: EndpointChange,
): Promise<RecordOutcome> {
  const after = attempt.webhook_event;
  const ttl = { [attr.ttl]: expiresAt(attempt.created_at) };
  const withTtl = (write: ReturnType<typeof listedWrites>[number]) =>
    'Put' in write ? { Put: { ...write.Put, Item: { ...write.Put.Item, ...ttl } } } : write;
  const endpointWrites = endpoint ? endpointReplacement(table, endpoint.before, endpoint.after) : [];
  try {
    await transact(table, [
      {
        Update: {
          TableName: table.name,
          Key: keys.webhookEvent(before.id),
          UpdateExpression:
            'SET #status = :status, attempts = :next, last_http_code = :code, modified_at = :now',
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
        },
      },
      // The endpoint's own item second: its cancellation reason is the transaction's second.
      ...endpointWrites,
      {
        Put: createOnly(
          table,
          item(
            { ...keys.deliveryAttempt(before.id, attempt.round, attempt.attempt), ...ttl },
            'delivery_attempt',
            attempt,
          ),
        ),
      },
      ...listedWrites(table, organizationDeliveries, attempt).map(withTtl),
      ...listedWrites(table, endpointDeliveries, attempt).map(withTtl),
    ]);
    return 'recorded';
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    if (error.reasons[0] === 'ConditionalCheckFailed') return 'event-changed';
    if (endpoint && error.reasons[1] === 'ConditionalCheckFailed') return 'endpoint-changed';
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
 * the later one's own record sends that round. One strongly consistent batch read.
 */
export async function redeliveryMessages(
  table: Table,
  redeliveries: readonly Redelivery[],
): Promise<{ webhook_event_id: string; endpoint_id: string; round: number }[]> {
  if (redeliveries.length === 0) return [];
  // One key per event (a batch read refuses a key twice): two requests for one event can share a batch.
  const ids = [...new Set(redeliveries.map((r) => r.webhook_event_id))];
  const found = await readMany(table, ids.map(keys.webhookEvent));
  return redeliveries.flatMap((r) => {
    const stored = found.get(keyId(keys.webhookEvent(r.webhook_event_id)));
    if (!stored || stored[ROUND_REQUEST] !== r.request) return [];
    const event = webhookEventRecord(stored);
    return [{ webhook_event_id: event.id, endpoint_id: event.endpoint_id, round: event.round }];
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
   * Per list (the organization's, or an endpoint's; or their view by outcome): its count's shards,
   * then its entries; both queries.
   */
  listDeliveryPage: [{ actions: ['dynamodb:Query'], leadingKeys: ['deliveryList'] }],
  /**
   * One transaction: the event's next delivery round (its organization one of the caller's) and the
   * request's redelivery item, from which the relay queues the round's first attempt.
   */
  startRound: [{ actions: ['dynamodb:UpdateItem', 'dynamodb:PutItem'], leadingKeys: ['webhookEvent'] }],
  /**
   * The relay: one webhook event per target (`recordWebhookEvent`); a Redeliver request's event
   * round, in one batch (`redeliveryMessages`); an expired delivery list entry: a tombstone and the
   * list's count down, in one transaction (`forgetExpiredEntries`).
   */
  relay: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent'] },
    { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEvent', 'deliveryList'] },
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['deliveryList'] },
  ],
  /**
   * The deliverer: the webhook event and its endpoint in one batch (`deliveryState`; the endpoint
   * again after a lost race, `rereadEndpoint`); one transaction of the event's new state, the
   * attempt, its list entries and counts and, when the attempt changes the endpoint's health, the
   * endpoint and its list entries (`recordAttempt`, `skipWebhookEvent`).
   */
  deliver: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent', 'webhookEndpoint'] },
    {
      actions: ['dynamodb:PutItem'],
      leadingKeys: ['webhookEvent', 'deliveryList', 'webhookEndpoint', 'webhookEndpointList'],
    },
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['webhookEvent', 'deliveryList'] },
  ],
} as const satisfies DataAccess;
