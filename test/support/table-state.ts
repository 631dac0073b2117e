/**
 * The whole table as data: a consistent full Scan, and a digest of it (each item's
 * canonical text by key) to prove that a batch of requests changed nothing, or
 * nothing but the items it was allowed to touch. `followTable` keeps that digest
 * from the table's stream, for suites that compare it after every batch.
 */
import { BatchWriteCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { openStreamReader, type StreamRecord } from '#scripts/local/stream-reader.ts';
import type { Table } from '#shared/data/dynamo.ts';
import { LIST_COUNT_PREFIX, type ListPartition, listKeys } from '#shared/data/table.ts';
import { dynamodbEndpoint, LOCAL_REGION } from './dynamodb.ts';

export type Item = Record<string, unknown>;

/** Every item of a paged read (Scan or Query), strongly consistent, page after page. */
export async function readAll(table: Table, read: 'scan' | { partitionKey: string }): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  do {
    const exclusiveStartKey = startKey;
    const input = {
      TableName: table.name,
      ConsistentRead: true,
      ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
    };
    const page = await table.doc.send(
      read === 'scan'
        ? new ScanCommand(input)
        : new QueryCommand({
            ...input,
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': read.partitionKey },
          }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

export const scanTable = (table: Table): Promise<Item[]> => readAll(table, 'scan');

/** JSON with object keys sorted and sets as sorted arrays: equal data, equal text. */
export function canonical(value: unknown): string {
  if (value instanceof Set) return canonical([...value].sort());
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value instanceof Uint8Array) return JSON.stringify(Buffer.from(value).toString('base64'));
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

export const itemKey = (item: { PK?: unknown; SK?: unknown }): string =>
  `${String(item.PK)}|${String(item.SK)}`;

export interface TableDigest {
  count: number;
  /** Canonical text of each item by key: equal tables, equal maps; a difference names the item. */
  items: Map<string, string>;
}

/** Digest of every item whose key `skip` does not name. */
export async function tableDigest(
  table: Table,
  skip: (key: string) => boolean = () => false,
): Promise<TableDigest> {
  const items = new Map<string, string>();
  for (const item of await scanTable(table)) {
    const key = itemKey(item);
    if (!skip(key)) items.set(key, canonical(item));
  }
  return { count: items.size, items };
}

export interface FollowedTable {
  /** The table's digest now: the last one, with what the stream recorded since. */
  digest(): Promise<TableDigest>;
  /** Fails unless a full Scan reads exactly the digest the stream gave: the shortcut proved. */
  verify(): Promise<void>;
  close(): void;
}

/**
 * The table's digest without scanning it again: one full Scan, then the writes as its stream
 * records them (NEW_IMAGE: each item as written, or the key of one removed), in order, shard by
 * shard, parents before their children. A batch of requests then costs what it wrote, not the
 * whole table (the HTTP fuzz suite: 121 s -> 71 s). `verify()` scans once more and compares, so a
 * record the stream missed is found. Only for a table nothing else writes while `digest()` reads,
 * and whose stream is on anyway: turning one on for the in-process fuzz suite's table made that
 * suite time out late in a CI run (DynamoDB Local slowed as the stream grew), so it still scans.
 */
export async function followTable(table: Table): Promise<FollowedTable> {
  const stream = await openStreamReader({
    dynamodbEndpoint: dynamodbEndpoint(),
    region: LOCAL_REGION,
    tableName: table.name,
    from: 'LATEST',
  });
  const items = (await tableDigest(table)).items;

  const apply = (records: StreamRecord[]) => {
    for (const { eventName, dynamodb: change } of records) {
      if (eventName === 'REMOVE') {
        items.delete(itemKey(unmarshall(change?.Keys ?? {}) as Item));
        continue;
      }
      const image = unmarshall(change?.NewImage ?? {}) as Item;
      items.set(itemKey(image), canonical(image));
    }
  };
  /** Every record written so far: rounds of reads until one reads nothing. */
  const catchUp = async () => {
    while ((await stream.readOnce(apply)) > 0);
  };
  const snapshot = (): TableDigest => ({ count: items.size, items: new Map(items) });

  return {
    async digest() {
      await catchUp();
      return snapshot();
    },
    async verify() {
      await catchUp();
      const scanned = await tableDigest(table);
      const differences = digestChanges({ count: items.size, items }, scanned);
      if (differences.length > 0)
        throw new Error(
          `the stream-kept digest differs from a full Scan: ${differences.slice(0, 10).join(', ')}`,
        );
    },
    close: () => stream.close(),
  };
}

/** An `allowed` entry that admits every item of one partition (an object's outbox: its sort keys are not known in advance). */
export const allowedPartition = (pk: string): string => `${pk}|*`;
/** An `allowed` entry that admits the items of one partition whose sort keys start with `skPrefix`. */
export const allowedSortKeys = (pk: string, skPrefix: string): string => `${pk}|${skPrefix}*`;

/** Keys added, removed or changed between two digests, except the `allowed` ones. */
export function digestChanges(
  before: TableDigest,
  after: TableDigest,
  allowed: ReadonlySet<string> = new Set(),
): string[] {
  const changed: string[] = [];
  const prefixes = [...allowed].filter((entry) => entry.endsWith('*')).map((entry) => entry.slice(0, -1));
  const isAllowed = (key: string) => allowed.has(key) || prefixes.some((prefix) => key.startsWith(prefix));
  for (const [key, text] of after.items) {
    if (isAllowed(key)) continue;
    if (!before.items.has(key)) changed.push(`added ${key}`);
    else if (before.items.get(key) !== text) changed.push(`changed ${key}`);
  }
  for (const key of before.items.keys()) {
    if (!isAllowed(key) && !after.items.has(key)) changed.push(`removed ${key}`);
  }
  return changed;
}

/** Soft-deletes an item as the operator would (`deleted_at` now), behind the API's back. */
export async function softDelete(table: Table, key: { PK: string; SK: string }): Promise<void> {
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: key,
      UpdateExpression: 'SET deleted_at = :t',
      ExpressionAttributeValues: { ':t': new Date().toISOString() },
    }),
  );
}

/** An organization's list partition (shared/data/listing.ts): its entries, and its count summed over the shards. */
export async function listPartition(
  table: Table,
  partition: ListPartition,
  organizationId: string,
): Promise<{ entries: Record<string, unknown>[]; count: number }> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': listKeys.partition(partition, organizationId) },
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  const isCount = (item: Record<string, unknown>) => String(item.SK).startsWith(LIST_COUNT_PREFIX);
  return {
    entries: items.filter((item) => !isCount(item)),
    count: items.filter(isCount).reduce((sum, shard) => sum + Number(shard.entry_count ?? 0), 0),
  };
}

/** Writes items as the operator would, straight to the table (batches of 25). */
export async function putItems(table: Table, items: readonly Item[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    await table.doc.send(
      new BatchWriteCommand({
        RequestItems: { [table.name]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
  }
}
