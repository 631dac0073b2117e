/**
 * DynamoDB's capacity arithmetic, as the service bills it (not as DynamoDB Local reports it): item
 * sizes from attribute names and values, write and read units per item, transactions at 2×, and
 * the index entries a write adds, replaces or removes, from the table definition the stack is built
 * from (`shared/data/table.ts`, read by `infra/stack.ts` and by the local runner).
 *
 * Rules (DynamoDB developer guide, "Item sizes and formats", "Read/write capacity mode",
 * "Transactions: capacity management", "Secondary indexes: provisioned throughput considerations"):
 * - an item's size is the sum over its attributes of the UTF-8 length of the name plus the size of
 *   the value: a string its UTF-8 length; a number about 1 byte per 2 significant digits + 1; binary
 *   its length; boolean and null 1; a list or map 3 bytes + per element its size + 1 (+ the key's
 *   length in a map); a set the sum of its elements;
 * - a write costs ⌈size / 1 KB⌉ units (at least 1), size = the larger of the item before and after
 *   (a delete: the item deleted; a failed condition: the item as it stands); in a transaction every
 *   action, condition checks included, costs twice that;
 * - a read costs ⌈size / 4 KB⌉ units per item for GetItem and BatchGetItem (at least 1 per key, even
 *   when absent), and ⌈sum of the sizes read / 4 KB⌉ (at least 1) for one Query page; half of that
 *   when eventually consistent;
 * - every secondary index whose keys the item carries gets an index write: put when the item enters
 *   it, delete when it leaves, delete + put when its index key changes, an update when a projected
 *   attribute changes (ALL: any attribute; KEYS_ONLY: only keys, so never without a key change),
 *   each ⌈entry size / 1 KB⌉ at the standard rate (index propagation is not transactional). The entry
 *   is the projection: the whole item for ALL, the table and index keys for KEYS_ONLY. The 100 bytes
 *   of per-entry storage overhead are not counted as throughput.
 * - a local index's writes land on the table partition of the item (they share its partition and its
 *   1,000 WCU/s); a global index's on the index partition of its partition key.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type IndexDefinition, tableDefinition } from '#shared/data/table.ts';

export type Item = Record<string, AttributeValue>;

const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

/** A number's stored size: 1 byte per two significant digits, plus 1. */
export function numberSize(text: string): number {
  const mantissa = text.trim().replace(/^[+-]/, '').split(/[eE]/)[0] ?? '';
  const digits = mantissa.replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.max(1, Math.ceil(digits.length / 2)) + 1;
}

export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + valueSize(element) + 1, 0);
  if (value.M !== undefined)
    return (
      3 + Object.entries(value.M).reduce((sum, [k, element]) => sum + utf8(k) + valueSize(element) + 1, 0)
    );
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  throw new Error(`unknown attribute value ${JSON.stringify(value)}`);
}

/** An item's size in bytes, by DynamoDB's rules (attribute names + values). */
export const itemSize = (item: Item | undefined): number =>
  item ? Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0) : 0;

export const KB = 1024;

/** Write units of one action on an item of `bytes` (the larger of before and after). */
export const writeUnits = (bytes: number, transactional: boolean): number =>
  Math.max(1, Math.ceil(bytes / KB)) * (transactional ? 2 : 1);

/** Read units of one item read by GetItem / BatchGetItem. */
export const itemReadUnits = (bytes: number, consistent: boolean, transactional = false): number =>
  Math.max(1, Math.ceil(bytes / (4 * KB))) * (transactional ? 2 : consistent ? 1 : 0.5);

/** Read units of one Query page reading items of these sizes. */
export const queryReadUnits = (sizes: number[], consistent: boolean): number =>
  Math.max(1, Math.ceil(sizes.reduce((a, b) => a + b, 0) / (4 * KB))) * (consistent ? 1 : 0.5);

export const indexes = tableDefinition.indexes as readonly IndexDefinition[];
const tableKeys = [tableDefinition.partitionKey.name, tableDefinition.sortKey.name];

/** The index's entry for this item, or undefined when the item lacks one of the index's keys. */
export function indexEntry(index: IndexDefinition, item: Item | undefined): Item | undefined {
  if (!item) return undefined;
  const keys = [index.partitionKey.name, index.sortKey.name];
  if (keys.some((name) => item[name] === undefined)) return undefined;
  if (index.projection !== 'keys') return item;
  return Object.fromEntries([...tableKeys, ...keys].map((name) => [name, item[name] as AttributeValue]));
}

const same = (a: AttributeValue | undefined, b: AttributeValue | undefined) =>
  JSON.stringify(a) === JSON.stringify(b);
const sameItem = (a: Item, b: Item) =>
  Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k) => same(a[k], b[k]));

export interface IndexWrite {
  index: string;
  kind: 'global' | 'local';
  action: 'put' | 'delete' | 'update';
  /** The partition the write lands on: the table's partition key value for a local index. */
  partitionKey: string;
  bytes: number;
  units: number;
}

/** The index writes one item change (`before` → `after`, either absent) causes. */
export function indexWrites(before: Item | undefined, after: Item | undefined): IndexWrite[] {
  const writes: IndexWrite[] = [];
  for (const index of indexes) {
    const old = indexEntry(index, before);
    const next = indexEntry(index, after);
    const write = (action: IndexWrite['action'], entry: Item, bytes = itemSize(entry)) => {
      writes.push({
        index: index.name,
        kind: index.kind,
        action,
        partitionKey: entry[index.partitionKey.name]?.S ?? '?',
        bytes,
        units: writeUnits(bytes, false),
      });
    };
    if (!old && next) write('put', next);
    else if (old && !next) write('delete', old);
    else if (old && next) {
      const keyMoved = [index.partitionKey.name, index.sortKey.name].some((k) => !same(old[k], next[k]));
      if (keyMoved) {
        write('delete', old);
        write('put', next);
      } else if (!sameItem(old, next)) write('update', next, Math.max(itemSize(old), itemSize(next)));
    }
  }
  return writes;
}
