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
 *
 * Filters that would otherwise drop entries of a page in memory (`is_archived=false`) are **views**:
 * a listing may name a few filters (`views`), and each entity is then also listed, with its entries
 * and a count, in the view of every combination of them it belongs to
 * (`LIST#PRODUCT#<org>#is_archived=false`, `…#is_archived=false#is_recurring=true`, …: 2^n lists for
 * n filters). A filtered page is read from its view exactly as an unfiltered one from the whole list.
 *
 * **Segments.** A field with few distinct values (a subscription's `status`, its `amount`) makes huge
 * tie groups: ordering by it would read whole lists. A listing may instead name such fields as its
 * `segments`: a list (or view) is then split by their values, each segment with its own entries and
 * sharded count (`#COUNT#<segment>#<shard>`, which also records the segment and its values):
 *
 *     PK = LIST#SUBSCRIPTION#<org>   SK = <segment>#<field>#<value>#<id>
 *     PK = LIST#SUBSCRIPTION#<org>   SK = #COUNT#<segment>#<shard>          count, segment values
 *
 * A page is one Query of the list's counts, then one Query per segment kept (a filter on a segment
 * field chooses segments, never items) that holds entities, ordered by the remaining criteria; the
 * segment fields, constant within a segment, order the segments when merged. Entries are written for
 * the fields that are not segment fields, plus the first segment field, whose entries (constant
 * value, then id) give the id order within a segment. Cost: offset + limit entries per segment read,
 * whatever the list's size; the count Query grows with the number of segments.
 *
 * **Counts kept from the stream** (`counts: 'stream'`). A count shard is an item that concurrent
 * writes of one list share: inside every create's transaction it makes concurrent creates conflict
 * (DynamoDB cancels overlapping transactions on one item). A listing may therefore leave its counts
 * to a projection of the table stream (`countWrites`, applied by `shared/data/subscription-counts.ts`):
 * the entity's transactions write only its entries. The segments are then known from a **registry
 * item** per segment (`#COUNT#<segment>#-`, no count, written before or with the first entry of the
 * segment, never removed, `segmentRegistryWrite`), and a page reads every registered segment whatever
 * its count, and reads past the counts' end: the entries, written in the entity's own transaction,
 * decide what a page holds; the counts only the `total`. A segment read to its end gives its exact
 * size (strongly consistent); one cut at the page is counted as max(its count, entries read). So
 * while the projection lags, a page never skips or repeats an entity; only `total` may be behind by
 * the changes not yet projected, in segments the page did not read to their end.
 *
 * **Slim entries** (`slim`). An entry that copies its record costs the record's size at every write
 * of every entry: a subscription at its largest (≈ 110 KB, 50 metadata pairs) has 16 entries, so a
 * revoke, which moves them all to another segment, deleted and put ≈ 3.5 MB of entries in one
 * transaction, past DynamoDB's 4 MB with its events. A listing may instead keep in each entry only
 * the attributes its order, owners, views and filters read (`slim.attributes`: a few hundred bytes);
 * the reader orders and cuts the page on the entries as before, then reads the page's records, and
 * only those, by key (one strongly consistent BatchGetItem per 100, `recordsOf`), within the same
 * read budget. A change that moves no entry key and changes no kept attribute writes no entry. An
 * entry written before a listing became slim is a whole copy, which holds every kept attribute: it
 * is read the same way, so the switch needs no migration (one rewrites it at the record's next change
 * of its entries). A record read after its entry is the record as it is then: a change between the
 * two reads shows in the page (the entry's place is the one it had a moment before).
 *
 * **Sharded owners.** A listing's `owner` may name a shard of an organization's list rather than the
 * organization (customers and products: `<org>#S<k>`, k from the id, `listShard`; a view's partition
 * follows its shard, `LIST#PRODUCT#<org>#S<k>#is_archived=false`): one tenant's
 * writes then spread over that many partitions, and a page passes every shard as one more owner (the
 * merge, the tie groups and the read bound are those of many organizations). A listing whose count
 * items are few and known by key (`countItems`) has the counts of all its owners read in one
 * BatchGetItem instead of one Query per owner.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { PolarRequestValidationError } from '../domain/errors.ts';
import { keyId, readMany } from './catalog.ts';
import { run, type Table } from './dynamo.ts';
import { itemBytes } from './item-size.ts';
import { item, record } from './records.ts';
import {
  encodeBalance,
  encodeTime,
  type Key,
  LIST_COUNT_PREFIX,
  LIST_COUNT_SHARDS,
  type ListPartition,
  type ListView,
  listKeys,
} from './table.ts';

/** What an entity is sorted by: a timestamp, a safe integer or a text; each may be null (sorted last). */
export type SortValue =
  | { time: string | null }
  | { integer: number | null }
  | { text: string | null }
  | { choice: string | null };

export interface Listing<R extends { id: string }, F extends string, V extends string = never> {
  /** The list partition (`shared/data/table.ts` `listPartitions`). */
  partition: ListPartition;
  /** Entity tag of the entries. */
  entity: string;
  /** The organization whose list holds the record. */
  owner: (record: R) => string;
  /** The sortable fields and how to read each from a record. */
  fields: { readonly [K in F]: (record: R) => SortValue };
  /** Filters served by views (a short value per record, such as `true`); each one doubles the writes. */
  views?: { readonly [K in V]: (record: R) => string };
  /** Fields with few values that split a list into segments (see above); none by default. */
  segments?: readonly F[];
  /**
   * Who keeps the counts: the entity's own transactions (the default), or a projection of the table
   * stream (`'stream'`, segmented listings only; see "Counts kept from the stream" above): the
   * entity's writes then leave the count shards alone, and a page reads every registered segment.
   */
  counts?: 'transaction' | 'stream';
  /**
   * Slim entries (see "Slim entries" above): each entry keeps only `id` and these attributes of the
   * record, and a page reads its records by key. Without it an entry is a whole copy of the record.
   */
  slim?: SlimEntries<R>;
  /**
   * The keys of every count item an owner's whole list may hold, when they are few and known (an
   * unsegmented listing whose owners are shards): a page then reads the counts of all its owners by
   * key in one BatchGetItem, rather than one Query per owner.
   */
  countItems?: (owner: string, view: ListView) => readonly Key[];
}

/** How the entries of a listing with slim entries find their records. */
export interface SlimEntries<R extends { id: string }> {
  /**
   * The record's attributes an entry keeps besides `id`: every one that the listing's `owner`,
   * `fields`, `views` and `segments` read, and every one a caller's filter of entries reads.
   */
  attributes: readonly Exclude<keyof R & string, 'id'>[];
  /** The item that holds the whole record. */
  recordKey: (id: string) => Key;
  /** The record, as `listedWrites` is given it, from that item. */
  fromItem: (stored: Record<string, unknown>) => R;
  /** The largest record item in bytes (by `item-size.ts`): the read bound's worst case per record. */
  maxBytes: number;
}

/** Which segments of a segmented listing a page takes, judged by their segment fields' values. */
export type SegmentFilter<F extends string> = (values: Readonly<Partial<Record<F, SortValue>>>) => boolean;

/** The values a page is filtered on, by view filter name. */
export type ListFilter<V extends string> = { readonly [K in V]?: string };

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

type AnyListing<R extends { id: string }> = Listing<R, string, string>;

/** The segment an entity belongs to: its segment fields' full encodings, concatenated ('' when unsegmented). */
function segmentOf<R extends { id: string }>(listing: AnyListing<R>, entity: R): string {
  // Each encoding is prefix-free (fixed width, or text ended by TEXT_END), so the concatenation is too.
  return (listing.segments ?? [])
    .map((field) => encodeSortValue(listing.fields[field]?.(entity) ?? { text: null }))
    .join('');
}

/** Where an entity's entries of one field start: `<field>#`, after `<segment>#` in a segmented listing. */
function entryPrefix<R extends { id: string }>(
  listing: AnyListing<R>,
  segment: string,
  field: string,
): string {
  return listing.segments ? `${segment}#${field}#` : `${field}#`;
}

function entryKey<R extends { id: string }>(
  listing: AnyListing<R>,
  entity: R,
  field: string,
  view: ListView,
): Key {
  const read = listing.fields[field] as (record: R) => SortValue;
  const value = entryKeyValue(read(entity));
  const prefix = entryPrefix(listing, segmentOf(listing, entity), field);
  return listKeys.entry(listing.partition, listing.owner(entity), `${prefix}${value}#${entity.id}`, view);
}

/** The fields that have entries: all of them, or in a segmented listing the non-segment ones and the first segment field. */
function fieldsOf<R extends { id: string }>(listing: AnyListing<R>): string[] {
  const segments = listing.segments ?? [];
  return Object.keys(listing.fields).filter((field) => !segments.includes(field) || field === segments[0]);
}

/** The view of a filter: its names in order, each with its value. */
function viewOf(filter: Readonly<Record<string, string | undefined>>): ListView {
  return Object.entries(filter)
    .filter((pair): pair is [string, string] => pair[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Every view an entity is listed in: one per combination of the listing's filters, the empty one first. */
function viewsOf<R extends { id: string }>(listing: AnyListing<R>, entity: R): ListView[] {
  const filters = Object.entries(listing.views ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const views: ListView[] = [];
  for (let mask = 0; mask < 2 ** filters.length; mask++) {
    views.push(
      filters.filter((_, bit) => (mask >> bit) & 1).map(([name, read]) => [name, read(entity)] as const),
    );
  }
  return views;
}

/** The count shard an entity adds to and later takes from: FNV-1a of its id. */
export function countShard(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % LIST_COUNT_SHARDS;
}

/**
 * The owner string of an entity's shard of its organization's list: `<org>#S<k>`, k = `countShard(id)`
 * (so the shard's only count item is `#COUNT#<k>`). An organization's entities then spread their
 * writes over `LIST_COUNT_SHARDS` partitions (each view's too: `LIST#PRODUCT#<org>#S<k>#is_archived=…`).
 */
export const listShard = (organizationId: string, id: string): string =>
  `${organizationId}#S${countShard(id)}`;

/**
 * The owners a page of these organizations' sharded list reads: per organization its
 * `LIST_COUNT_SHARDS` shards and, unless the organization is among `migrated` (its old partition
 * holds nothing for good: shared/data/list-markers.ts), its unsharded partition (the entities
 * written before the shards, until migrated; then only its counts, at 0).
 */
export function listShardOwners(
  organizationIds: readonly string[],
  migrated: ReadonlySet<string> = new Set(),
): string[] {
  return organizationIds.flatMap((organizationId) => [
    ...(migrated.has(organizationId) ? [] : [organizationId]),
    ...Array.from({ length: LIST_COUNT_SHARDS }, (_, k) => `${organizationId}#S${k}`),
  ]);
}

const SHARD_OWNER = /#S(\d+)$/;

/**
 * `Listing.countItems` of an unsegmented sharded listing (`listShard`): a shard `<org>#S<k>` holds
 * one count item per view, `#COUNT#<k>`; the unsharded partition `<org>` up to `LIST_COUNT_SHARDS`.
 */
export const shardedCountItems =
  (partition: ListPartition) =>
  (owner: string, view: ListView): readonly Key[] => {
    const shard = SHARD_OWNER.exec(owner);
    return shard
      ? [listKeys.count(partition, owner, Number(shard[1]), view)]
      : Array.from({ length: LIST_COUNT_SHARDS }, (_, k) => listKeys.count(partition, owner, k, view));
  };

/** The entity's shard of its list's (or view's) count, or in a segmented listing of its segment's count. */
function countUpdate<R extends { id: string }>(
  table: Table,
  listing: AnyListing<R>,
  entity: R,
  view: ListView,
  delta: 1 | -1,
): Write {
  const owner = listing.owner(entity);
  const shard = countShard(entity.id);
  if (!listing.segments) {
    return {
      Update: {
        TableName: table.name,
        Key: listKeys.count(listing.partition, owner, shard, view),
        UpdateExpression: 'ADD entry_count :delta',
        ExpressionAttributeValues: { ':delta': delta },
      },
    };
  }
  const segment = segmentOf(listing, entity);
  const values = Object.fromEntries(
    listing.segments.map((field) => [field, listing.fields[field]?.(entity)]),
  );
  return {
    Update: {
      TableName: table.name,
      Key: listKeys.segmentCount(listing.partition, owner, segment, shard, view),
      UpdateExpression: 'ADD entry_count :delta SET segment_key = :segment, segment_values = :values',
      ExpressionAttributeValues: { ':delta': delta, ':segment': segment, ':values': values },
    },
  };
}

/** What an entry holds of its record: the whole record, or with `slim` its id and kept attributes. */
function entryOf<R extends { id: string }>(listing: AnyListing<R>, entity: R): Record<string, unknown> {
  if (!listing.slim) return entity;
  const kept: Record<string, unknown> = { id: entity.id };
  for (const attribute of listing.slim.attributes) kept[attribute] = entity[attribute];
  return kept;
}

const put = <R extends { id: string }>(table: Table, listing: AnyListing<R>, key: Key, entity: R): Write => ({
  Put: { TableName: table.name, Item: item(key, listing.entity, entryOf(listing, entity)) },
});

/** The count's shard in the entity's own transaction, unless the stream keeps the counts. */
const ownCount = <R extends { id: string }>(
  table: Table,
  listing: AnyListing<R>,
  entity: R,
  view: ListView,
  delta: 1 | -1,
): Write[] => (listing.counts === 'stream' ? [] : [countUpdate(table, listing, entity, view, delta)]);

/** An entity entering a view: one entry per sort field, and the view's count up by one. */
function entering<R extends { id: string }>(table: Table, listing: AnyListing<R>, entity: R, view: ListView) {
  return [
    ...fieldsOf(listing).map((field) => put(table, listing, entryKey(listing, entity, field, view), entity)),
    ...ownCount(table, listing, entity, view, 1),
  ];
}

/** An entity leaving a view: its entries deleted, the view's count down by one. */
function leaving<R extends { id: string }>(table: Table, listing: AnyListing<R>, entity: R, view: ListView) {
  return [
    ...fieldsOf(listing).map((field) => ({
      Delete: { TableName: table.name, Key: entryKey(listing, entity, field, view) },
    })),
    ...ownCount(table, listing, entity, view, -1),
  ];
}

/** The registry item's suffix after `#COUNT#<segment>#` (a shard is a number: they never meet). */
const REGISTRY = '-';

/** The key of the registry item of the entity's segment, in the list's whole view (`counts: 'stream'`). */
export function segmentRegistryKey<R extends { id: string }, F extends string, V extends string>(
  listing: Listing<R, F, V>,
  entity: R,
): Key {
  const any = listing as unknown as AnyListing<R>;
  return {
    PK: listKeys.partition(any.partition, any.owner(entity)),
    SK: `${LIST_COUNT_PREFIX}${segmentOf(any, entity)}#${REGISTRY}`,
  };
}

/**
 * The registry item of the entity's segment: the segment and its values, no count. The same item
 * whoever writes it, so writing it again changes nothing.
 */
export function segmentRegistryWrite<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  entity: R,
): { Put: { TableName: string; Item: Record<string, unknown> } } {
  const any = listing as unknown as AnyListing<R>;
  const segments = any.segments ?? [];
  return {
    Put: {
      TableName: table.name,
      Item: {
        ...segmentRegistryKey(listing, entity),
        entity: 'list_segment',
        segment_key: segmentOf(any, entity),
        segment_values: Object.fromEntries(segments.map((field) => [field, any.fields[field]?.(entity)])),
      },
    },
  };
}

/**
 * The count updates that move an entity from where `before` counted it to where `after` counts it
 * (either undefined: not counted), in every view: nothing when both count it in the same places.
 * For a listing whose counts the stream keeps (`counts: 'stream'`): its projection's writes.
 */
export function countWrites<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  before: R | undefined,
  after: R | undefined,
): Write[] {
  const any = listing as unknown as AnyListing<R>;
  const places = (entity: R | undefined) =>
    entity
      ? viewsOf(any, entity).map((view) => ({
          view,
          at: JSON.stringify([listing.owner(entity), view, segmentOf(any, entity), entity.id]),
        }))
      : [];
  const from = places(before);
  const to = places(after);
  const kept = new Set(from.map((p) => p.at).filter((at) => to.some((p) => p.at === at)));
  return [
    ...from.filter((p) => !kept.has(p.at)).map((p) => countUpdate(table, any, before as R, p.view, -1)),
    ...to.filter((p) => !kept.has(p.at)).map((p) => countUpdate(table, any, after as R, p.view, 1)),
  ];
}

/** A new entity: in every view it belongs to, one entry per sort field and the count up by one. */
export function listedWrites<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  entity: R,
): Write[] {
  const any = listing as unknown as AnyListing<R>;
  return viewsOf(any, entity).flatMap((view) => entering(table, any, entity, view));
}

/**
 * A changed entity (same owner): in a view it stays in, every entry rewritten (a slim entry only
 * when its key or kept attributes changed) and those whose key moved deleted; a view (or segment) it leaves loses its entries and one from its count, a view (or
 * segment) it enters gains them.
 */
export function relistedWrites<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  before: R,
  after: R,
): Write[] {
  const any = listing as unknown as AnyListing<R>;
  const afterViews = viewsOf(any, after);
  return viewsOf(any, before).flatMap((oldView, index) => {
    const newView = afterViews[index] as ListView;
    if (
      JSON.stringify(oldView) !== JSON.stringify(newView) ||
      segmentOf(any, before) !== segmentOf(any, after)
    ) {
      return [...leaving(table, any, before, oldView), ...entering(table, any, after, newView)];
    }
    const writes: Write[] = [];
    // A slim entry whose key and kept attributes are unchanged is already what it would be rewritten to.
    const sameEntry =
      any.slim !== undefined && JSON.stringify(entryOf(any, before)) === JSON.stringify(entryOf(any, after));
    for (const field of fieldsOf(any)) {
      const oldKey = entryKey(any, before, field, oldView);
      const newKey = entryKey(any, after, field, newView);
      if (oldKey.SK !== newKey.SK) writes.push({ Delete: { TableName: table.name, Key: oldKey } });
      if (oldKey.SK !== newKey.SK || !sameEntry) writes.push(put(table, any, newKey, after));
    }
    return writes;
  });
}

/** A removed (soft-deleted) entity: its entries deleted and the count down by one, in every view. */
export function delistedWrites<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  entity: R,
): Write[] {
  const any = listing as unknown as AnyListing<R>;
  return viewsOf(any, entity).flatMap((view) => leaving(table, any, entity, view));
}

/** The keys an entity occupies in a listing: its entries and count shards, in every view. */
export function listedKeys<R extends { id: string }, F extends string, V extends string>(
  listing: Listing<R, F, V>,
  entity: R,
): Key[] {
  return listedWrites({ name: '', doc: undefined as never }, listing, entity).map((write) =>
    'Put' in write
      ? (write.Put.Item as unknown as Key)
      : 'Update' in write
        ? write.Update.Key
        : write.Delete.Key,
  );
}

// ---------------------------------------------------------------------------
// Reads.
// ---------------------------------------------------------------------------

/**
 * **The read bound.** A list request reads at most `LIST_READ_UNITS` read units of its list
 * partitions. A strongly consistent Query costs 1 read unit per 4 KB of the items it reads (summed,
 * rounded up, at least 1), so the bound is a byte budget: 500 × 4 KB = 2,000 KB. It is enforced
 * before every Query, never after: a Query of `Limit` n on a list whose entries are at most `max`
 * bytes (`ENTRY_BYTES`) can cost no more than min(n × max, 1 MB + max) (DynamoDB stops a Query once
 * it has read 1 MB), and it is sent only when that worst case fits what is left, the `Limit`
 * lowered to fit when nothing else is in flight; when not even one entry fits, the request is
 * refused (`ListReadTooCostly`). Before any entry is read, a page whose entries would cost more even
 * at their smallest (`ENTRY_BYTES` `min`: offset + limit entries from each non-empty source) is
 * refused at once. Concurrent Queries of one request (organizations, segments) each hold their worst
 * case until they settle at their actual size.
 */
export const LIST_READ_UNITS = 500;
const READ_UNIT_BYTES = 4 * 1024;
const QUERY_MAX_BYTES = 1024 * 1024;

/**
 * The smallest and largest entry of each list, in bytes by DynamoDB's rules (`item-size.ts`):
 * `max` from an entity at every input limit (50 metadata pairs of 500 four-byte characters, a
 * product's 5000-character description and 100 prices, ...), `min` from the smallest legal one;
 * both measured by `test/integration/list-bounds.test.ts`; a slim entry (customers, subscriptions)
 * holds a few short attributes, and its record's size is its listing's `slim.maxBytes`. A count shard
 * is at most `COUNT_BYTES`.
 */
export const ENTRY_BYTES: Readonly<Record<ListPartition, { min: number; max: number }>> = {
  customerList: { min: 200, max: 6 * 1024 },
  productList: { min: 400, max: 160 * 1024 },
  meterList: { min: 400, max: 130 * 1024 },
  subscriptionList: { min: 200, max: 2 * 1024 },
  subscriptionCustomerList: { min: 200, max: 2 * 1024 },
  subscriptionProductList: { min: 200, max: 2 * 1024 },
  subscriptionCustomerProductList: { min: 200, max: 2 * 1024 },
  webhookEndpointList: { min: 400, max: 16 * 1024 },
  deliveryList: { min: 200, max: 400 * 1024 },
};
const COUNT_BYTES = 1024;

/**
 * A list request that would read more than `LIST_READ_UNITS`: refused with a 422 of the contract
 * (nothing more is read), at the parameter the client changes to be served.
 */
export class ListReadTooCostly extends PolarRequestValidationError {
  constructor(
    /**
     * `depth`: the page lies too deep (refused before its entries are read); `size`: its entries are
     * too large for the budget; `matches`: a filter matches more than can be read (`parameter`).
     */
    readonly reason: 'depth' | 'size' | 'matches',
    readonly entries: number,
    parameter = 'query',
  ) {
    super([
      reason === 'depth'
        ? {
            loc: ['query', 'page'],
            msg: `Reaching this page would read at least ${entries} list entries, more than one request may read (${LIST_READ_UNITS} read units): ask for an earlier page or a smaller limit, or narrow the list with filters (organization_id, ...).`,
            type: 'value_error',
          }
        : reason === 'size'
          ? {
              loc: ['query', 'limit'],
              msg: `The entries up to this page are too large to read in one request (${LIST_READ_UNITS} read units): use a smaller limit or an earlier page, or narrow the list with filters.`,
              type: 'value_error',
            }
          : {
              loc: ['query', parameter],
              msg: `More entries match than one request may read (${LIST_READ_UNITS} read units): use a longer, more specific value, or narrow the list with organization_id.`,
              type: 'value_error',
            },
    ]);
    this.name = 'ListReadTooCostly';
  }
}

/** The read budget of one list request (see above). */
export class ReadBudget {
  private spent = 0;
  private held = 0;
  private entries = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly bytes: number = LIST_READ_UNITS * READ_UNIT_BYTES) {}

  /** Bytes read so far (each Query rounded up to whole read units). */
  get spentBytes(): number {
    return this.spent;
  }

  /** Refuses at once a read of `entries` entries that costs more than the budget even at `minBytes` each. */
  require(entries: number, minBytes: number): void {
    if (entries * minBytes > this.bytes - this.spent) throw new ListReadTooCostly('depth', entries);
  }

  /**
   * Runs one Query of at most `wanted` items of at most `maxBytes` each, once its worst case fits:
   * `read` gets the `Limit` granted (≤ wanted) and returns the items it read.
   */
  async query<T extends Record<string, unknown>>(
    wanted: number,
    maxBytes: number,
    read: (limit: number) => Promise<T[]>,
    /** `items`: a batch of reads by key, each item rounded up to whole read units of its own. */
    kind: 'query' | 'items' = 'query',
  ): Promise<T[]> {
    const itemUnits = Math.ceil(maxBytes / READ_UNIT_BYTES) * READ_UNIT_BYTES;
    const worst = (limit: number) =>
      kind === 'items'
        ? limit * itemUnits
        : Math.ceil(Math.min(limit * maxBytes, QUERY_MAX_BYTES + maxBytes) / READ_UNIT_BYTES) *
          READ_UNIT_BYTES;
    for (;;) {
      const free = this.bytes - this.spent - this.held;
      let limit = wanted;
      if (worst(limit) > free && this.held === 0) {
        limit = Math.min(
          wanted,
          kind === 'items'
            ? Math.floor(free / itemUnits)
            : Math.floor((free - READ_UNIT_BYTES + 1) / maxBytes),
        );
      }
      if (limit >= 1 && worst(limit) <= free) {
        const hold = worst(limit);
        this.held += hold;
        try {
          const items = await read(limit);
          const units =
            kind === 'items'
              ? items.reduce((sum, stored) => sum + Math.ceil(itemBytes(stored) / READ_UNIT_BYTES), 0)
              : Math.max(
                  1,
                  Math.ceil(items.reduce((sum, stored) => sum + itemBytes(stored), 0) / READ_UNIT_BYTES),
                );
          this.spent += units * READ_UNIT_BYTES;
          this.entries += items.length;
          return items;
        } finally {
          this.held -= hold;
          for (const wake of this.waiting.splice(0)) wake();
        }
      }
      if (this.held === 0) throw new ListReadTooCostly('size', this.entries);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}

/**
 * A Query read page after page within `budget`, each page one `budget.query` of at most `limit` items
 * of at most `maxBytes` each (its `Limit` the units granted): every item, or the first `max`.
 */
export async function queryWithinBudget(
  table: Table,
  budget: ReadBudget,
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey' | 'Limit'>,
  page: { limit: number; maxBytes: number; max?: number },
): Promise<Record<string, unknown>[]> {
  const { limit, maxBytes, max = Number.POSITIVE_INFINITY } = page;
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const read = await budget.query(Math.min(limit, max - items.length), maxBytes, async (granted) => {
      const result = await run(() =>
        table.doc.send(
          new QueryCommand({
            ...input,
            TableName: table.name,
            Limit: granted,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      );
      start = result.LastEvaluatedKey;
      return (result.Items ?? []) as Record<string, unknown>[];
    });
    items.push(...read);
  } while (start && items.length < max);
  return items;
}

/** Items read per follow-up query while completing a tie group at the page boundary. */
const CONTINUATION = 25;
/** The largest `Limit` one Query of a list's entries asks for (it reads at most 1 MB anyway). */
const MAX_QUERY_LIMIT = 1000;

export interface ListPage<R> {
  items: R[];
  total: number;
}

/** The comparator of the requested order in full: the criteria, then ascending id. */
export function listComparator<R extends { id: string }, F extends string, V extends string = never>(
  listing: Listing<R, F, V>,
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
 * Lists whose read bound is not applied here: the delivery list, whose bound and 422 (its contract
 * answers `RequestValidationError`) belong to its own change.
 */
const UNBOUNDED_LISTS: ReadonlySet<ListPartition> = new Set(['deliveryList']);

/** The `Limit` asked of a range read without a bound of its own (the budget lowers it as it must). */
const UNBOUNDED_QUERY = 10_000;

/**
 * The page bound, checked before any entry is read: the page's entries (offset + limit from each
 * non-empty source, at most its count) at their smallest must fit the request's read budget.
 */
export function checkPageBound(
  partition: ListPartition,
  sources: readonly { count: number }[],
  needed: number,
  budget: ReadBudget,
): void {
  const entries = sources.reduce((sum, source) => sum + Math.min(source.count, needed), 0);
  budget.require(entries, ENTRY_BYTES[partition].min);
}

/** One part of a page's source: an owner's list (or view), or one segment of it, with its count. */
interface Source {
  owner: string;
  /** '' in an unsegmented listing. */
  segment: string;
  count: number;
}

/**
 * The entities at positions [offset, offset + limit) of the requested order, across the given
 * organizations' lists (or their views for `filter`; in a segmented listing, their segments that
 * `segments` keeps), and the total number of entities in them.
 */
export async function listPage<R extends { id: string }, F extends string, V extends string = never>(
  table: Table,
  listing: Listing<R, F, V>,
  owners: readonly string[],
  criteria: readonly SortCriterion<F>[],
  offset: number,
  limit: number,
  filter: ListFilter<V> = {},
  segments: SegmentFilter<F> = () => true,
  budget: ReadBudget | undefined = UNBOUNDED_LISTS.has(listing.partition) ? undefined : new ReadBudget(),
): Promise<ListPage<R>> {
  const view = viewOf(filter);
  const sources =
    listing.countItems && !listing.segments
      ? await readCountItems(table, listing.countItems, owners, view, budget)
      : (
          await Promise.all(
            owners.map((owner) =>
              listing.segments
                ? readSegments(table, listing, owner, view, segments, budget)
                : readCount(table, listing.partition, owner, view, budget).then((count) => [
                    { owner, segment: '', count },
                  ]),
            ),
          )
        ).flat();
  const counted = sources.reduce((sum, source) => sum + source.count, 0);
  // Counts kept by the stream may lag the entries: every registered segment is read, past the end too.
  const lagging = listing.counts === 'stream';
  if (!lagging && offset >= counted) return { items: [], total: counted };
  // The bound is judged on the counts (a lag of a few entries); the budget still caps what is read.
  if (budget) checkPageBound(listing.partition, sources, offset + limit, budget);
  // Within a segment its fields are constant: the remaining criteria order it, and when none remain,
  // the first segment field's entries (one value, then the id) give the id order.
  const segmentFields: readonly F[] = listing.segments ?? [];
  const within = criteria.filter((criterion) => !segmentFields.includes(criterion.field));
  const [idOrder] = segmentFields;
  const readOrder = within.length > 0 || !idOrder ? within : [{ field: idOrder, descending: false }];
  const needed = offset + limit;
  const perSource = await Promise.all(
    sources.map((source) =>
      source.count > 0 || lagging ? readSource(table, listing, source, view, readOrder, needed, budget) : [],
    ),
  );
  // A segment read to its end (fewer entries than the page needed) has exactly the entries read.
  const total = lagging
    ? sources.reduce((sum, source, i) => {
        const read = perSource[i]?.length ?? 0;
        return sum + (read < needed ? read : Math.max(source.count, read));
      }, 0)
    : counted;
  const merged = perSource.flat().sort(listComparator(listing, criteria));
  return { items: await recordsOf(table, listing, merged.slice(offset, offset + limit), budget), total };
}

/** BatchGetItem takes at most 100 keys per call. */
const BATCH_KEYS = 100;

/**
 * Items read by key (strongly consistent, at most 100 per BatchGetItem), each batch within `budget`
 * as reads by key are priced (`ReadBudget.query` kind `items`: each item of at most `maxBytes`
 * rounded up on its own), by `keyId`.
 */
export async function readKeysWithinBudget(
  table: Table,
  keys: readonly Key[],
  maxBytes: number,
  budget?: ReadBudget,
): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  let next = 0;
  while (next < keys.length) {
    const from = next;
    const readBatch = async (limit: number) => {
      const batch = keys.slice(from, from + limit);
      next = from + batch.length;
      return [...(await readMany(table, batch)).values()];
    };
    const wanted = Math.min(BATCH_KEYS, keys.length - from);
    const items = budget ? await budget.query(wanted, maxBytes, readBatch, 'items') : await readBatch(wanted);
    for (const stored of items) found.set(keyId(stored as { PK: unknown; SK: unknown }), stored);
  }
  return found;
}

/**
 * The records of a page's entries, in the entries' order: the entries themselves, or for a listing
 * with slim entries the records read by key (strongly consistent, at most 100 per BatchGetItem,
 * within `budget`: records too large for what is left refuse the request as `ListReadTooCostly`).
 * A record gone since its entry was read (none is: an entry and its record are written and removed
 * in one transaction) is left out.
 */
export async function recordsOf<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  entries: readonly R[],
  budget?: ReadBudget,
): Promise<R[]> {
  const { slim } = listing;
  if (!slim || entries.length === 0) return [...entries];
  const found = await readKeysWithinBudget(
    table,
    entries.map((entry) => slim.recordKey(entry.id)),
    slim.maxBytes,
    budget,
  );
  return entries.flatMap((entry) => {
    const stored = found.get(keyId(slim.recordKey(entry.id)));
    return stored ? [slim.fromItem(stored)] : [];
  });
}

/** A text prefix matched more entities of one organization than a page may read. */
/** What a list of an organization-owned kind is asked for (List Products, List Meters). */
export interface RecordPageQuery<F extends string, V extends string> {
  organizationIds: readonly string[];
  criteria: readonly SortCriterion<F>[];
  filter: ListFilter<V>;
  /** Name prefix (`query`), answered from the name entries (`listMatchingPage`). */
  namePrefix?: { prefix: string; maxMatches: number };
  offset: number;
  limit: number;
}

/**
 * A page of records and the total matching, from the organizations' lists: the whole order
 * (`listPage`), or with `namePrefix` the matching range of the name entries. Entries hold the whole
 * record; `toRecord` reads one back.
 */
export async function listRecordPage<R extends { id: string }, F extends string, V extends string, T>(
  table: Table,
  listing: Listing<R, F | 'name', V>,
  query: RecordPageQuery<F | 'name', V>,
  toRecord: (entry: Record<string, unknown>) => T,
): Promise<ListPage<T>> {
  const { organizationIds, criteria, filter, namePrefix, offset, limit } = query;
  const page = namePrefix
    ? await listMatchingPage(
        table,
        listing,
        organizationIds,
        { field: 'name', ...namePrefix },
        criteria,
        offset,
        limit,
        filter,
      )
    : await listPage(table, listing, organizationIds, criteria, offset, limit, filter);
  return {
    items: page.items.map((entry) => toRecord(entry as unknown as Record<string, unknown>)),
    total: page.total,
  };
}

export class TooManyMatches extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} entries match`);
    this.name = 'TooManyMatches';
  }
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

/**
 * Every entity whose entry key starts with `keyPrefix` (`textKeyPrefix`) in one organization's list,
 * or in one of its views; with `maxMatches`, more than that many is `TooManyMatches` (read no further).
 */
export async function readRange<R extends { id: string }, F extends string, V extends string = never>(
  table: Table,
  listing: Listing<R, F, V>,
  owner: string,
  keyPrefix: string,
  bound: { view?: ListView; maxMatches?: number; budget?: ReadBudget; maxBytes?: number } = {},
): Promise<R[]> {
  const { view = [], maxMatches, budget } = bound;
  const read: R[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const exclusiveStartKey = startKey;
    const query = async (limit: number | undefined) => {
      const result = await run(() =>
        table.doc.send(
          new QueryCommand({
            TableName: table.name,
            KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
            ExpressionAttributeValues: {
              ':pk': listKeys.partition(listing.partition, owner, view),
              ':prefix': keyPrefix,
            },
            ConsistentRead: true,
            ...(limit === undefined ? {} : { Limit: limit }),
            ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
          }),
        ),
      );
      startKey = result.LastEvaluatedKey;
      return result.Items ?? [];
    };
    // One beyond the bound shows that it is exceeded.
    const wanted = maxMatches === undefined ? undefined : maxMatches + 1 - read.length;
    const items = budget
      ? await budget.query(
          wanted ?? UNBOUNDED_QUERY,
          bound.maxBytes ?? ENTRY_BYTES[listing.partition].max,
          query,
        )
      : await query(wanted);
    for (const stored of items) read.push(record<R>(stored));
    if (maxMatches !== undefined && read.length > maxMatches) throw new TooManyMatches(maxMatches);
  } while (startKey);
  return read;
}

/** One page of a set of entities (each counted once, whichever ranges found it), in the requested order. */
export function pageOf<R extends { id: string }, F extends string, V extends string = never>(
  listing: Listing<R, F, V>,
  entities: readonly R[],
  criteria: readonly SortCriterion<F>[],
  offset: number,
  limit: number,
): ListPage<R> {
  const unique = [...new Map(entities.map((entity) => [entity.id, entity])).values()];
  unique.sort(listComparator(listing, criteria));
  return { items: unique.slice(offset, offset + limit), total: unique.length };
}

/**
 * Like `listPage`, among the entities whose text `field` starts with `prefix` (compared as the
 * order compares text: in lowercase, by code point), in the lists or views of `filter`: one key range
 * of the field's entries per organization (`readRange`, at most `maxMatches` each), ordered in memory.
 */
export async function listMatchingPage<R extends { id: string }, F extends string, V extends string = never>(
  table: Table,
  listing: Listing<R, F, V>,
  owners: readonly string[],
  match: { field: F; prefix: string; maxMatches: number },
  criteria: readonly SortCriterion<F>[],
  offset: number,
  limit: number,
  filter: ListFilter<V> = {},
  budget: ReadBudget = new ReadBudget(),
): Promise<ListPage<R>> {
  const view = viewOf(filter);
  const keyPrefix = textKeyPrefix(match.field, match.prefix, 'startsWith');
  // The entry key holds the first TEXT_KEY_CODE_POINTS code points; the rest is compared here.
  const wanted = PRESENT + encodeText(match.prefix).slice(0, -TEXT_END.length);
  const read = listing.fields[match.field];
  const perOwner = await Promise.all(
    owners.map((owner) =>
      readRange(table, listing, owner, keyPrefix, { view, maxMatches: match.maxMatches, budget }),
    ),
  );
  // The bound is the organization's: its shards' (and unsharded partition's) matches together.
  const perOrganization = new Map<string, number>();
  owners.forEach((owner, i) => {
    const organization = owner.replace(SHARD_OWNER, '');
    const matched = (perOrganization.get(organization) ?? 0) + (perOwner[i]?.length ?? 0);
    if (matched > match.maxMatches) throw new TooManyMatches(match.maxMatches);
    perOrganization.set(organization, matched);
  });
  const matches = perOwner.flat().filter((entity) => encodeSortValue(read(entity)).startsWith(wanted));
  const page = pageOf(listing, matches, criteria, offset, limit);
  return { items: await recordsOf(table, listing, page.items, budget), total: page.total };
}

/** An owner's live entities in a listing (its whole list): the sum of its count shards. */
export function listedCount(table: Table, partition: ListPartition, owner: string): Promise<number> {
  return readCount(table, partition, owner, []);
}

/**
 * The counts of many owners' lists whose count items are known by key (`Listing.countItems`): one
 * strongly consistent BatchGetItem (per 100 keys) for all of them, each item at one read unit.
 */
async function readCountItems(
  table: Table,
  countItems: (owner: string, view: ListView) => readonly Key[],
  owners: readonly string[],
  view: ListView,
  budget?: ReadBudget,
): Promise<Source[]> {
  const keysOf = (owner: string) => countItems(owner, view);
  const found = await readKeysWithinBudget(table, owners.flatMap(keysOf), COUNT_BYTES, budget);
  return owners.map((owner) => ({
    owner,
    segment: '',
    count: keysOf(owner).reduce((sum, key) => sum + Number(found.get(keyId(key))?.entry_count ?? 0), 0),
  }));
}

/** The sum of the count's shards: one strongly consistent Query of at most `LIST_COUNT_SHARDS` small items. */
async function readCount(
  table: Table,
  partition: ListPartition,
  owner: string,
  view: ListView,
  budget?: ReadBudget,
): Promise<number> {
  const query = async () => {
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :count)',
          ExpressionAttributeValues: {
            ':pk': listKeys.partition(partition, owner, view),
            ':count': LIST_COUNT_PREFIX,
          },
          ConsistentRead: true,
        }),
      ),
    );
    return result.Items ?? [];
  };
  const shards = budget ? await budget.query(LIST_COUNT_SHARDS, COUNT_BYTES, query) : await query();
  return shards.reduce((sum, shard) => sum + Number(shard.entry_count ?? 0), 0);
}

/**
 * The segments of an owner's list (or view) that the filter keeps, each with its count summed over its
 * shards: one Query of the count items (`#COUNT#<segment>#<shard>`).
 */
async function readSegments<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  owner: string,
  view: ListView,
  keep: SegmentFilter<F>,
  budget?: ReadBudget,
): Promise<Source[]> {
  const bySegment = new Map<string, Source>();
  const counts = await readRange(table, listing, owner, LIST_COUNT_PREFIX, {
    view,
    ...(budget ? { budget, maxBytes: COUNT_BYTES } : {}),
  });
  for (const shard of counts as unknown as {
    segment_key?: string;
    segment_values?: unknown;
    entry_count?: number;
  }[]) {
    if (!keep((shard.segment_values ?? {}) as Partial<Record<F, SortValue>>)) continue;
    const segment = String(shard.segment_key ?? '');
    const source = bySegment.get(segment) ?? { owner, segment, count: 0 };
    source.count += Number(shard.entry_count ?? 0);
    bySegment.set(segment, source);
  }
  return [...bySegment.values()];
}

/** At least the first `needed` entities of one list, view or segment in the requested order (the boundary tie group completed), in no particular order. */
async function readSource<R extends { id: string }, F extends string, V extends string>(
  table: Table,
  listing: Listing<R, F, V>,
  source: Source,
  view: ListView,
  criteria: readonly SortCriterion<F>[],
  needed: number,
  budget?: ReadBudget,
): Promise<R[]> {
  const [primary] = criteria;
  if (!primary) throw new Error('at least one sort criterion is required');
  const exact = criteria.length === 1 && !primary.descending;
  const groupOf = (entity: R) => entryKeyValue(listing.fields[primary.field](entity));
  // A text longer than the key holds ties with others on its key: the entry order is then no longer
  // the full order, and the boundary's group must be completed as for any other tie.
  const whole = (entity: R) => groupOf(entity) === encodeSortValue(listing.fields[primary.field](entity));
  const read: R[] = [];
  let startKey: Record<string, unknown> | undefined;
  for (;;) {
    const missing = needed - read.length;
    // One entry beyond the page shows whether the boundary tie group is complete.
    // At most MAX_QUERY_LIMIT per Query (a page far past a lagging list's counts needs an offset no
    // Limit may carry: DynamoDB answers such a Limit with a 500); the loop goes on from the last key.
    const pageSize = Math.min(missing > 0 ? missing + (exact ? 0 : 1) : CONTINUATION, MAX_QUERY_LIMIT);
    const exclusiveStartKey = startKey;
    const query = async (limit: number) => {
      const result = await run(() =>
        table.doc.send(
          new QueryCommand({
            TableName: table.name,
            KeyConditionExpression: 'PK = :pk AND begins_with(SK, :field)',
            ExpressionAttributeValues: {
              ':pk': listKeys.partition(listing.partition, source.owner, view),
              ':field': entryPrefix(listing as unknown as AnyListing<R>, source.segment, primary.field),
            },
            ScanIndexForward: !primary.descending,
            ConsistentRead: true,
            Limit: limit,
            ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
          }),
        ),
      );
      startKey = result.LastEvaluatedKey;
      return result.Items ?? [];
    };
    const items = budget
      ? await budget.query(pageSize, ENTRY_BYTES[listing.partition].max, query)
      : await query(pageSize);
    for (const stored of items) read.push(record<R>(stored));
    if (!startKey || boundaryComplete(read, needed, exact, groupOf, whole)) break;
  }
  return read;
}

function boundaryComplete<R>(
  read: R[],
  needed: number,
  exact: boolean,
  groupOf: (entity: R) => string,
  whole: (entity: R) => boolean,
): boolean {
  if (read.length < needed) return false;
  const boundary = read[needed - 1];
  if (exact && boundary !== undefined && whole(boundary)) return true;
  const last = read[read.length - 1];
  return (
    read.length > needed &&
    boundary !== undefined &&
    last !== undefined &&
    groupOf(boundary) !== groupOf(last)
  );
}
