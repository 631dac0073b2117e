/**
 * Usage events (`POST /v1/events/ingest`) and their reads.
 *
 * - **The event is its own deduplication claim.** Its id is derived from (organization,
 *   `external_id`) (`usageEventId`), and it is written with one conditional `PutItem` on
 *   `UEVENT#<id>`: a second event with that `external_id`, in the same batch or years later, finds
 *   the key taken and is a duplicate. One write per event, no transaction, no item that two events
 *   share: an event is stored whole or not at all, and a batch retried after a failure part-way
 *   stores each event once (the events the first try wrote are duplicates of the retry).
 * - **Its list entry is its own index entry.** The item carries `GSI1PK` =
 *   `UEVLIST#<organization>#S<shard>` (16 shards by the id, so that one organization's or one
 *   customer's events spread over 16 index partitions) and `GSI1SK` = its timestamp in
 *   microseconds (fixed width) and id: written by the same put, nothing to keep in step.
 * - **Names and counts per batch.** Each batch adds its stored events to one of 16 shards (by
 *   request) of its organization's name counts (`UEVNAME#<organization>#S<shard>` / `NAME#<name>`):
 *   one `UpdateItem` per name and batch (one or two more for a batch older than the last one seen),
 *   so their cost is the batch's, not the event's.
 * - **The stream.** Each stored event is one `INSERT` record of `UEVENT#<id>` on the table's stream;
 *   a duplicate writes nothing and makes no record. The aggregation consumer (docs/data-model.md,
 *   Usage events) counts each distinct event once from these records.
 */
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { derivedId } from '../domain/ids.ts';
import { readMany } from './catalog.ts';
import { run, type Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { queryWithinBudget, type ReadBudget } from './listing.ts';
import { type CustomerRecord, customerRecord, record } from './records.ts';
import { indexNames, keys, partitions } from './table.ts';

export const EVENT_LIST_SHARDS = 16;
export const EVENT_NAME_SHARDS = 16;
/** Width of a timestamp in microseconds since the epoch in a sort key (up to year 33658). */
const MICROS_WIDTH = 18;

/** An event as stored (its metadata as JSON text: DynamoDB numbers cannot hold every JSON number). */
export interface UsageEventRecord {
  id: string;
  organization_id: string;
  name: string;
  /** Microseconds since the epoch. */
  timestamp_us: number;
  external_id: string | null;
  customer_id: string | null;
  external_customer_id: string | null;
  metadata: string;
  /** The request that stored it: its own put retried by the SDK is recognised as its own. */
  ingest_request: string;
  ingested_at: string;
}

/** One name's counts in one shard (or summed over the shards). */
export interface EventNameCounts {
  organization_id: string;
  name: string;
  occurrences: number;
  first_seen_us: number;
  last_seen_us: number;
}

/**
 * The id of the event with this `external_id` in this organization: a UUID version 4 made of the
 * SHA-256 of both (its version and variant bits set), the same for every try, so that the event's
 * own conditional put is its deduplication.
 */
export const usageEventId = (organizationId: string, externalId: string): string =>
  derivedId('usage-event', organizationId, externalId);

/** The list shard of an event: its id's first byte (ids are hashes or random). */
export const eventListShard = (eventId: string): number =>
  Number.parseInt(eventId.slice(0, 2), 16) % EVENT_LIST_SHARDS;

export const eventListPartition = (organizationId: string, shard: number): string =>
  `${partitions.usageEventList}${organizationId}#S${shard}`;

export const eventTimeKey = (micros: number): string => String(micros).padStart(MICROS_WIDTH, '0');

const namesPartition = (organizationId: string, shard: number): string =>
  `${partitions.usageEventNames}${organizationId}#S${shard}`;

export function storedUsageEvent(event: UsageEventRecord): Record<string, unknown> {
  return {
    ...keys.usageEvent(event.id),
    GSI1PK: eventListPartition(event.organization_id, eventListShard(event.id)),
    GSI1SK: `${eventTimeKey(event.timestamp_us)}#${event.id}`,
    entity: 'usage_event',
    ...event,
  };
}

export const usageEventRecord = (stored: Record<string, unknown>): UsageEventRecord =>
  record<UsageEventRecord>(stored);

/**
 * Stores one event unless its id is taken: `inserted`, or `duplicate` when another request stored
 * it (its id, derived from the `external_id`, is the claim). When the SDK retried this very put
 * (its first answer lost), the item found carries this request's mark: that is ours, `inserted`.
 */
export async function putUsageEvent(
  table: Table,
  event: UsageEventRecord,
): Promise<'inserted' | 'duplicate'> {
  try {
    await run(() =>
      table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: storedUsageEvent(event),
          ConditionExpression: 'attribute_not_exists(PK)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return 'inserted';
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    return error.item?.ingest_request === event.ingest_request ? 'inserted' : 'duplicate';
  }
}

/**
 * Adds a batch's stored events of one name to one shard of the organization's name counts: one
 * `UpdateItem` that adds the count and moves the last timestamp forward (conditioned on not moving
 * it back); a batch older than the last one seen adds its count without it, and a batch before the
 * first seen moves that back with one more conditional update (a concurrent batch's wider value
 * wins its condition). Live events, in time order: one call per name and batch.
 */
export async function countEventName(
  table: Table,
  shard: number,
  counts: EventNameCounts,
  request: string,
): Promise<void> {
  const Key = { PK: namesPartition(counts.organization_id, shard), SK: `NAME#${counts.name}` };
  const values = {
    ':n': counts.occurrences,
    ':entity': 'usage_event_name',
    ':org': counts.organization_id,
    ':name': counts.name,
    ':first': counts.first_seen_us,
    ':request': request,
  };
  const common =
    'ADD occurrences :n SET entity = :entity, organization_id = :org, #name = :name, first_seen_us = if_not_exists(first_seen_us, :first), last_request = :request';
  // The SDK's retry of an update whose answer was lost finds this request's mark: applied once.
  const notYet = '(attribute_not_exists(last_request) OR last_request <> :request)';
  const update = (withLast: boolean) =>
    run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key,
          UpdateExpression: withLast ? `${common}, last_seen_us = :last` : common,
          ExpressionAttributeNames: { '#name': 'name' },
          ExpressionAttributeValues: withLast ? { ...values, ':last': counts.last_seen_us } : values,
          ConditionExpression: withLast
            ? `(attribute_not_exists(last_seen_us) OR last_seen_us <= :last) AND ${notYet}`
            : notYet,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  let first: number;
  try {
    first = Number((await update(true)).Attributes?.first_seen_us);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    if (error.item?.last_request === request) first = Number(error.item.first_seen_us);
    else {
      try {
        first = Number((await update(false)).Attributes?.first_seen_us);
      } catch (again) {
        if (!(again instanceof ConditionFailed) || again.item?.last_request !== request) throw again;
        first = Number(again.item.first_seen_us);
      }
    }
  }
  if (first > counts.first_seen_us) {
    try {
      await run(() =>
        table.doc.send(
          new UpdateCommand({
            TableName: table.name,
            Key,
            UpdateExpression: 'SET first_seen_us = :value',
            ConditionExpression: 'first_seen_us > :value',
            ExpressionAttributeValues: { ':value': counts.first_seen_us },
          }),
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }
}

/** An event by id (strongly consistent: an event just ingested is found). */
export async function getUsageEvent(table: Table, eventId: string): Promise<UsageEventRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.usageEvent(eventId), ConsistentRead: true }),
    ),
  );
  return result.Item ? usageEventRecord(result.Item) : undefined;
}

/** Customers by id, in one strongly consistent BatchGetItem per 100 (an ingest's check, a page's embeds). */
export async function readCustomers(
  table: Table,
  customerIds: readonly string[],
): Promise<Map<string, CustomerRecord>> {
  const found = await readMany(
    table,
    [...new Set(customerIds)].map((id) => keys.customer(id)),
  );
  const customers = new Map<string, CustomerRecord>();
  for (const stored of found.values()) {
    const customer = customerRecord(stored);
    customers.set(customer.id, customer);
  }
  return customers;
}

/** Largest event entry (50 metadata pairs of 500 four-byte characters and the rest) and the smallest. */
export const EVENT_ENTRY_BYTES = { min: 250, max: 110 * 1024 } as const;

export interface EventRangeRead {
  items: UsageEventRecord[];
  /** More entries follow in the order read. */
  more: boolean;
  /** Where to go on (DynamoDB's LastEvaluatedKey). */
  next?: Record<string, unknown>;
}

/**
 * One Query of an organization's event list shard between two timestamps (inclusive, in
 * microseconds), in timestamp order or its reverse, at most `limit` entries, within `budget`.
 * The index is eventually consistent: an event is listed a moment after its ingest is answered.
 */
export async function readEventRange(
  table: Table,
  organizationId: string,
  shard: number,
  range: { from: number; to: number },
  descending: boolean,
  limit: number,
  budget: ReadBudget,
  start?: Record<string, unknown>,
): Promise<EventRangeRead> {
  let next: Record<string, unknown> | undefined;
  const items = await budget.query(limit, EVENT_ENTRY_BYTES.max, async (granted) => {
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          IndexName: indexNames.gsi1,
          KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK BETWEEN :lo AND :hi',
          ExpressionAttributeValues: {
            ':pk': eventListPartition(organizationId, shard),
            ':lo': `${eventTimeKey(range.from)}#`,
            ':hi': `${eventTimeKey(range.to)}$`,
          },
          ScanIndexForward: !descending,
          Limit: granted,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    next = result.LastEvaluatedKey;
    return (result.Items ?? []) as Record<string, unknown>[];
  });
  return { items: items.map(usageEventRecord), more: next !== undefined, ...(next ? { next } : {}) };
}

/** Every name count of an organization: its 16 shards, each read to its end, within `budget`. */
export async function readEventNames(
  table: Table,
  organizationId: string,
  budget: ReadBudget,
): Promise<EventNameCounts[]> {
  // One shard after another: a request makes one call at a time (its first failure ends it).
  const read: EventNameCounts[] = [];
  for (let shard = 0; shard < EVENT_NAME_SHARDS; shard++) {
    const items = await queryWithinBudget(
      table,
      budget,
      {
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :names)',
        ExpressionAttributeValues: { ':pk': namesPartition(organizationId, shard), ':names': 'NAME#' },
        ConsistentRead: true,
      },
      { limit: 1000, maxBytes: 1024 },
    );
    for (const item of items) {
      read.push({
        organization_id: String(item.organization_id),
        name: String(item.name),
        occurrences: Number(item.occurrences),
        first_seen_us: Number(item.first_seen_us),
        last_seen_us: Number(item.last_seen_us),
      });
    }
  }
  return read;
}

export const access = {
  /** The event's conditional put (its index entry comes with it). */
  putUsageEvent: [{ actions: ['dynamodb:PutItem'], leadingKeys: ['usageEvent'] }],
  /** A batch's names: one update per name (and the conditional widenings of its timestamps). */
  countEventName: [{ actions: ['dynamodb:UpdateItem'], leadingKeys: ['usageEventNames'] }],
  getUsageEvent: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['usageEvent'] }],
  /** The customers an ingest names by id, or a page embeds. */
  readCustomers: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer'] }],
  /** The shards of an organization's event list (index `GSI1`). */
  // `indexNames.gsi1` written out: a property read here would keep these grants in the bundles
  // (esbuild cannot drop it), and no bundle may carry a grant (test/infra/sam.test.ts).
  readEventRange: [{ actions: ['dynamodb:Query'], leadingKeys: ['usageEventList'], indexes: ['GSI1'] }],
  /** The shards of an organization's name counts. */
  readEventNames: [{ actions: ['dynamodb:Query'], leadingKeys: ['usageEventNames'] }],
} as const satisfies DataAccess;
