/**
 * Sorted, paged lists of an organization's entities (customers, products, subscriptions,
 * webhook endpoints), served from the base table, never from a scan.
 *
 * Why not indexes: local secondary indexes can only be declared when a table is created, and
 * CloudFormation adds one global secondary index per stack update; a GSI is also only eventually
 * consistent, so a customer created a moment ago could be missing from the list. Instead each
 * listed entity keeps one **entry** per sort field in its owner's list partition
 * (`LIST#<KIND>#<organization id>`), written in the same transaction as the entity itself:
 *
 *     PK = LIST#CUSTOMER#<org>   SK = <field>#<order-preserving value>#<id>   (+ a full copy of the record)
 *     PK = LIST#CUSTOMER#<org>   SK = #COUNT#<shard>                         count = live entities
 *
 * A page is one strongly consistent Query per organization (`begins_with(SK, '<field>#')`, read
 * forwards for an ascending primary criterion and backwards for a descending one) plus the count,
 * read in parallel. The entry order is exact for the primary criterion with ascending id as the
 * tie-break; when the request asks for more (a descending primary, or further criteria), entries
 * with the same primary value form a tie group: the reader completes the group at the page boundary
 * and orders it in memory, so pages neither overlap nor skip. Cost: offset + limit entries (plus the
 * boundary's tie group) per organization, whatever the list's size; writes cost one entry per sort
 * field. The IAM grant of a list function is `Query` and `GetItem` on its kind's list partitions only.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { run, type Table } from './dynamo.ts';
import { item, record } from './records.ts';
import {
  encodeBalance,
  encodeTime,
  type Key,
  LIST_COUNT_PREFIX,
  LIST_COUNT_SHARDS,
  type ListPartition,
  listKeys,
} from './table.ts';

/** What an entity is sorted by: a timestamp, a safe integer or a text; each may be null (sorted last). */
export type SortValue =
  | { time: string | null }
  | { integer: number | null }
  | { text: string | null }
  | { choice: string | null };

export interface Listing<R extends { id: string }, F extends string> {
  /** The list partition (`shared/data/table.ts` `listPartitions`). */
  partition: ListPartition;
  /** Entity tag of the entries. */
  entity: string;
  /** The organization whose list holds the record. */
  owner: (record: R) => string;
  /** The sortable fields and how to read each from a record. */
  fields: { readonly [K in F]: (record: R) => SortValue };
}

export interface SortCriterion<F extends string> {
  field: F;
  descending: boolean;
}

/**
 * `sorting` values as the API takes them (`name`, `-created_at`), applied in the order given; a later
 * value for a field already used changes nothing. The default applies when none is given.
 */
export function parseListSorting<F extends string>(
  values: readonly string[] | null | undefined,
  defaults: readonly string[],
): SortCriterion<F>[] {
  const criteria: SortCriterion<F>[] = [];
  for (const value of values && values.length > 0 ? values : defaults) {
    const descending = value.startsWith('-');
    const field = (descending ? value.slice(1) : value) as F;
    if (!criteria.some((criterion) => criterion.field === field)) criteria.push({ field, descending });
  }
  return criteria;
}

// ---------------------------------------------------------------------------
// Order-preserving encoding of sort values.
// ---------------------------------------------------------------------------

/** Code points of a text value that take part in the entry key; longer values tie and are ordered in memory. */
const TEXT_KEY_CODE_POINTS = 160;
const PRESENT = '1';
const ABSENT = '2';
/** Ends a text value so that a prefix sorts before its extensions. Lower than every escaped code point. */
const TEXT_END = '\u0001';

/**
 * Text compares case-insensitively (its lowercase form) by code point, which is the order DynamoDB
 * applies to the UTF-8 bytes of a key. Code points U+0000 to U+0002 are escaped so that no key holds a
 * NUL and `TEXT_END` stays below every character.
 */
function encodeText(text: string, codePoints = Number.POSITIVE_INFINITY): string {
  let out = '';
  let count = 0;
  for (const char of text.toLowerCase()) {
    if (count++ >= codePoints) break;
    const code = char.codePointAt(0) ?? 0;
    out += code <= 2 ? `\u0002${String.fromCodePoint(code + 1)}` : char;
  }
  return out + TEXT_END;
}

/** The full encoding of a value, for comparing in memory; `keyLength` truncates text for the entry key. */
export function encodeSortValue(value: SortValue, keyLength = Number.POSITIVE_INFINITY): string {
  if ('time' in value) return value.time === null ? ABSENT : PRESENT + encodeTime(value.time);
  if ('integer' in value) return value.integer === null ? ABSENT : PRESENT + encodeBalance(value.integer);
  const text = 'text' in value ? value.text : value.choice;
  return text === null ? ABSENT : PRESENT + encodeText(text, keyLength);
}

/** Compares two strings as DynamoDB compares keys: by their UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

const entryKeyValue = (value: SortValue) => encodeSortValue(value, TEXT_KEY_CODE_POINTS);

// ---------------------------------------------------------------------------
// Writes: the transaction items that keep a list in step with its entities.
// ---------------------------------------------------------------------------

type Write =
  | { Put: { TableName: string; Item: Record<string, unknown> } }
  | { Delete: { TableName: string; Key: Key } }
  | {
      Update: {
        TableName: string;
        Key: Key;
        UpdateExpression: string;
        ExpressionAttributeValues: Record<string, unknown>;
      };
    };

function entryKey<R extends { id: string }, F extends string>(
  listing: Listing<R, F>,
  entity: R,
  field: F,
): Key {
  const value = entryKeyValue(listing.fields[field](entity));
  return listKeys.entry(listing.partition, listing.owner(entity), `${field}#${value}#${entity.id}`);
}

function fieldsOf<R extends { id: string }, F extends string>(listing: Listing<R, F>): F[] {
  return Object.keys(listing.fields) as F[];
}

/** The count shard an entity adds to and later takes from: FNV-1a of its id. */
export function countShard(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % LIST_COUNT_SHARDS;
}

function countUpdate(
  table: Table,
  partition: ListPartition,
  owner: string,
  id: string,
  delta: 1 | -1,
): Write {
  return {
    Update: {
      TableName: table.name,
      Key: listKeys.count(partition, owner, countShard(id)),
      UpdateExpression: 'ADD entry_count :delta',
      ExpressionAttributeValues: { ':delta': delta },
    },
  };
}

/** A new entity: one entry per sort field, and the count up by one. */
export function listedWrites<R extends { id: string }, F extends string>(
  table: Table,
  listing: Listing<R, F>,
  entity: R,
): Write[] {
  return [
    ...fieldsOf(listing).map((field) => ({
      Put: { TableName: table.name, Item: item(entryKey(listing, entity, field), listing.entity, entity) },
    })),
    countUpdate(table, listing.partition, listing.owner(entity), entity.id, 1),
  ];
}

/** A changed entity (same owner): every entry rewritten, the entries whose key moved deleted. */
export function relistedWrites<R extends { id: string }, F extends string>(
  table: Table,
  listing: Listing<R, F>,
  before: R,
  after: R,
): Write[] {
  const writes: Write[] = [];
  for (const field of fieldsOf(listing)) {
    const oldKey = entryKey(listing, before, field);
    const newKey = entryKey(listing, after, field);
    if (oldKey.SK !== newKey.SK) writes.push({ Delete: { TableName: table.name, Key: oldKey } });
    writes.push({ Put: { TableName: table.name, Item: item(newKey, listing.entity, after) } });
  }
  return writes;
}

/** A removed (soft-deleted) entity: its entries deleted, the count down by one. */
export function delistedWrites<R extends { id: string }, F extends string>(
  table: Table,
  listing: Listing<R, F>,
  entity: R,
): Write[] {
  return [
    ...fieldsOf(listing).map((field) => ({
      Delete: { TableName: table.name, Key: entryKey(listing, entity, field) },
    })),
    countUpdate(table, listing.partition, listing.owner(entity), entity.id, -1),
  ];
}

// ---------------------------------------------------------------------------
// Reads.
// ---------------------------------------------------------------------------

/** Items read per follow-up query while completing a tie group at the page boundary. */
const CONTINUATION = 25;

export interface ListPage<R> {
  items: R[];
  total: number;
}

/** The comparator of the requested order in full: the criteria, then ascending id. */
export function listComparator<R extends { id: string }, F extends string>(
  listing: Listing<R, F>,
  criteria: readonly SortCriterion<F>[],
) {
  return (a: R, b: R): number => {
    for (const { field, descending } of criteria) {
      const read = listing.fields[field];
      const diff = compareKeys(encodeSortValue(read(a)), encodeSortValue(read(b)));
      if (diff !== 0) return descending ? -diff : diff;
    }
    return compareKeys(a.id, b.id);
  };
}

/**
 * The entities at positions [offset, offset + limit) of the requested order, across the given
 * organizations' lists, and the total number of entities in them.
 */
export async function listPage<R extends { id: string }, F extends string>(
  table: Table,
  listing: Listing<R, F>,
  owners: readonly string[],
  criteria: readonly SortCriterion<F>[],
  offset: number,
  limit: number,
): Promise<ListPage<R>> {
  const counts = await Promise.all(owners.map((owner) => readCount(table, listing.partition, owner)));
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (offset >= total) return { items: [], total };
  const perOwner = await Promise.all(
    owners.map((owner, index) =>
      (counts[index] ?? 0) > 0 ? readOwner(table, listing, owner, criteria, offset + limit) : [],
    ),
  );
  const merged = perOwner.flat().sort(listComparator(listing, criteria));
  return { items: merged.slice(offset, offset + limit), total };
}

/**
 * Filtered lists are answered from the entries' keys too: the entries of one field whose value equals
 * a text, or starts with it, case-insensitively, lie in one key range (`textKeyPrefix`), read in full
 * (`readRange`); the matches of every range are then ordered and cut in memory (`pageOf`). Cost: the
 * number of matches, never the size of the list. Entry keys hold the first 160 code points of a text,
 * so a longer text shares its range with others that begin alike: callers compare the values read.
 */
export function textKeyPrefix<F extends string>(
  field: F,
  text: string,
  how: 'equals' | 'startsWith',
): string {
  const value = entryKeyValue({ text });
  // An exact value ends with its terminator, then the id's separator; a prefix stops before both.
  return how === 'equals' ? `${field}#${value}#` : `${field}#${value.slice(0, -TEXT_END.length)}`;
}

/** Every entity whose entry key starts with `keyPrefix` (`textKeyPrefix`) in one organization's list. */
export async function readRange<R extends { id: string }, F extends string>(
  table: Table,
  listing: Listing<R, F>,
  owner: string,
  keyPrefix: string,
): Promise<R[]> {
  const read: R[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const exclusiveStartKey = startKey;
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: {
            ':pk': listKeys.partition(listing.partition, owner),
            ':prefix': keyPrefix,
          },
          ConsistentRead: true,
          ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
        }),
      ),
    );
    for (const stored of result.Items ?? []) read.push(record<R>(stored));
    startKey = result.LastEvaluatedKey;
  } while (startKey);
  return read;
}

/** One page of a set of entities (each counted once, whichever ranges found it), in the requested order. */
export function pageOf<R extends { id: string }, F extends string>(
  listing: Listing<R, F>,
  entities: readonly R[],
  criteria: readonly SortCriterion<F>[],
  offset: number,
  limit: number,
): ListPage<R> {
  const unique = [...new Map(entities.map((entity) => [entity.id, entity])).values()];
  unique.sort(listComparator(listing, criteria));
  return { items: unique.slice(offset, offset + limit), total: unique.length };
}

/** The sum of the count's shards: one strongly consistent Query of at most `LIST_COUNT_SHARDS` small items. */
async function readCount(table: Table, partition: ListPartition, owner: string): Promise<number> {
  const result = await run(() =>
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :count)',
        ExpressionAttributeValues: {
          ':pk': listKeys.partition(partition, owner),
          ':count': LIST_COUNT_PREFIX,
        },
        ConsistentRead: true,
      }),
    ),
  );
  return (result.Items ?? []).reduce((sum, shard) => sum + Number(shard.entry_count ?? 0), 0);
}

/** At least the first `needed` entities of one organization's list in the requested order (the boundary tie group completed), in no particular order. */
async function readOwner<R extends { id: string }, F extends string>(
  table: Table,
  listing: Listing<R, F>,
  owner: string,
  criteria: readonly SortCriterion<F>[],
  needed: number,
): Promise<R[]> {
  const [primary] = criteria;
  if (!primary) throw new Error('at least one sort criterion is required');
  const exact = criteria.length === 1 && !primary.descending;
  const groupOf = (entity: R) => entryKeyValue(listing.fields[primary.field](entity));
  const read: R[] = [];
  let startKey: Record<string, unknown> | undefined;
  for (;;) {
    const missing = needed - read.length;
    // One entry beyond the page shows whether the boundary tie group is complete.
    const pageSize = missing > 0 ? missing + (exact ? 0 : 1) : CONTINUATION;
    const exclusiveStartKey = startKey;
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :field)',
          ExpressionAttributeValues: {
            ':pk': listKeys.partition(listing.partition, owner),
            ':field': `${primary.field}#`,
          },
          ScanIndexForward: !primary.descending,
          ConsistentRead: true,
          Limit: pageSize,
          ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
        }),
      ),
    );
    for (const stored of result.Items ?? []) read.push(record<R>(stored));
    startKey = result.LastEvaluatedKey;
    if (!startKey || boundaryComplete(read, needed, exact, groupOf)) break;
  }
  return read;
}

function boundaryComplete<R>(
  read: R[],
  needed: number,
  exact: boolean,
  groupOf: (entity: R) => string,
): boolean {
  if (read.length < needed) return false;
  if (exact) return true;
  const boundary = read[needed - 1];
  const last = read[read.length - 1];
  return (
    read.length > needed &&
    boundary !== undefined &&
    last !== undefined &&
    groupOf(boundary) !== groupOf(last)
  );
}
