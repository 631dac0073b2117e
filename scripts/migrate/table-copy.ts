/**
 * Moving every item of one table to another (`npm run migrate:table`, docs/deploying.md, "Moving to
 * a table without local indexes"): a copy, a catch-up, and a check that the two hold the same items.
 *
 * - `copyTable`: parallel `Scan` segments (strongly consistent) of the old table, each page written
 *   to the new one with `BatchWriteItem` (25 puts a call, unprocessed items retried with backoff).
 *   A put overwrites, so a copy run twice, or resumed, leaves the same items: idempotent. With a
 *   checkpoint file each segment's position is saved after its page is written, and a run started
 *   again continues from there: resumable.
 * - `syncTable`: the catch-up for writes that landed on the old table during the copy. Every old
 *   item is compared (content hash) with its copy, read back with `BatchGetItem`; a missing or
 *   different one is put again; then every new item whose key the old table no longer holds is
 *   deleted. Run under a write freeze, it leaves the new table equal to the old one.
 * - `tableDigest` / `verifyTables`: the item count and an order-independent content hash of each
 *   table (the sum, modulo 2^256, of each item's SHA-256 over its canonical form: sets sorted, map
 *   keys sorted), so "equal" means the same items, attribute for attribute.
 *
 * Items are read and written as raw attribute values (the low-level client): numbers keep their
 * exact text, sets stay sets, nothing is converted on the way.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type AttributeValue,
  BatchGetItemCommand,
  BatchWriteItemCommand,
  type DynamoDBClient,
  ScanCommand,
  type ScanCommandOutput,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;
type ItemKey = Record<string, AttributeValue>;

export const DEFAULT_SEGMENTS = 4;
const WRITE_BATCH = 25;
const READ_BATCH = 100;
const MAX_ATTEMPTS = 12;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Full jitter, capped: a throttled table is given room rather than hammered. */
const backoff = (attempt: number) => sleep(Math.random() * Math.min(5_000, 25 * 2 ** attempt));

// ---------------------------------------------------------------------------
// Canonical form and hashes
// ---------------------------------------------------------------------------

function canonical(value: AttributeValue): unknown {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: true };
  if (value.SS !== undefined) return { SS: [...value.SS].sort() };
  if (value.NS !== undefined) return { NS: [...value.NS].sort() };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')).sort() };
  if (value.L !== undefined) return { L: value.L.map(canonical) };
  if (value.M !== undefined) return { M: canonicalMap(value.M) };
  throw new Error(`unknown attribute value ${JSON.stringify(value)}`);
}

function canonicalMap(map: Record<string, AttributeValue>): [string, unknown][] {
  return Object.keys(map)
    .sort()
    .map((name) => [name, canonical(map[name] as AttributeValue)]);
}

/** SHA-256 of the item's canonical form: equal for equal items, whatever their attributes' order. */
export function itemHash(item: Item): Buffer {
  return createHash('sha256')
    .update(JSON.stringify(canonicalMap(item)))
    .digest();
}

/** A stable text of the item's key, for maps keyed by item. */
export function keyText(key: ItemKey, keyNames: readonly string[]): string {
  return JSON.stringify(keyNames.map((name) => canonical(key[name] as AttributeValue)));
}

const pickKey = (item: Item, keyNames: readonly string[]): ItemKey =>
  Object.fromEntries(keyNames.map((name) => [name, item[name] as AttributeValue]));

// ---------------------------------------------------------------------------
// Retried batch calls
// ---------------------------------------------------------------------------

/** Writes the requests, 25 a call, until DynamoDB has processed every one. Returns the calls made. */
export async function writeAll(
  client: DynamoDBClient,
  table: string,
  requests: WriteRequest[],
): Promise<number> {
  let calls = 0;
  for (let i = 0; i < requests.length; i += WRITE_BATCH) {
    let pending = requests.slice(i, i + WRITE_BATCH);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt >= MAX_ATTEMPTS) {
        throw new Error(
          `${table}: ${pending.length} writes still unprocessed after ${MAX_ATTEMPTS} attempts`,
        );
      }
      if (attempt > 0) await backoff(attempt);
      const result = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      calls++;
      pending = result.UnprocessedItems?.[table] ?? [];
    }
  }
  return calls;
}

/** Reads the keys, 100 a call, strongly consistent, until every one is answered; absent ones are not returned. */
export async function readAll(
  client: DynamoDBClient,
  table: string,
  keys: readonly ItemKey[],
): Promise<Item[]> {
  const found: Item[] = [];
  for (let i = 0; i < keys.length; i += READ_BATCH) {
    let pending: ItemKey[] = keys.slice(i, i + READ_BATCH);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt >= MAX_ATTEMPTS) {
        throw new Error(`${table}: ${pending.length} reads still unprocessed after ${MAX_ATTEMPTS} attempts`);
      }
      if (attempt > 0) await backoff(attempt);
      const result = await client.send(
        new BatchGetItemCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }),
      );
      found.push(...(result.Responses?.[table] ?? []));
      pending = result.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return found;
}

// ---------------------------------------------------------------------------
// Parallel scan
// ---------------------------------------------------------------------------

type SegmentPosition = ItemKey | 'done' | undefined;

/**
 * Scans `table` in `segments` parallel segments, strongly consistent, handing each page to `onPage`
 * before reading the next; `start[s]` resumes segment s after that key ('done': skip it), and
 * `onProgress` hears each segment's position once its page is handled.
 */
async function scanSegments(
  client: DynamoDBClient,
  table: string,
  segments: number,
  onPage: (items: Item[], segment: number) => Promise<void>,
  options: {
    start?: readonly SegmentPosition[];
    onProgress?: (segment: number, position: SegmentPosition) => void;
    /** Stop (throwing) after this many pages in all: how the tests interrupt a copy. */
    stopAfterPages?: number;
    pageLimit?: number;
  } = {},
): Promise<void> {
  let pages = 0;
  await Promise.all(
    Array.from({ length: segments }, async (_, segment) => {
      let position = options.start?.[segment];
      if (position === 'done') return;
      for (;;) {
        const page: ScanCommandOutput = await client.send(
          new ScanCommand({
            TableName: table,
            Segment: segment,
            TotalSegments: segments,
            ConsistentRead: true,
            ...(options.pageLimit ? { Limit: options.pageLimit } : {}),
            ...(position ? { ExclusiveStartKey: position } : {}),
          }),
        );
        if (options.stopAfterPages !== undefined && pages >= options.stopAfterPages) {
          throw new CopyInterrupted(`stopped after ${pages} pages`);
        }
        await onPage(page.Items ?? [], segment);
        pages++;
        position = page.LastEvaluatedKey ?? 'done';
        options.onProgress?.(segment, position);
        if (position === 'done') return;
      }
    }),
  );
}

export class CopyInterrupted extends Error {}

// ---------------------------------------------------------------------------
// Copy, catch-up, verify
// ---------------------------------------------------------------------------

export interface CopyOptions {
  client: DynamoDBClient;
  from: string;
  to: string;
  segments?: number;
  /** A JSON file keeping each segment's position: a copy started again with it resumes. */
  checkpoint?: string;
  /** Items a Scan page holds at most (default: DynamoDB's 1 MB page). */
  pageLimit?: number;
  stopAfterPages?: number;
}

interface Checkpoint {
  from: string;
  to: string;
  segments: number;
  positions: SegmentPosition[];
  copied: number;
}

function readCheckpoint(options: CopyOptions, segments: number): Checkpoint {
  const fresh: Checkpoint = { from: options.from, to: options.to, segments, positions: [], copied: 0 };
  if (!options.checkpoint) return fresh;
  let saved: Checkpoint;
  try {
    saved = JSON.parse(readFileSync(options.checkpoint, 'utf8')) as Checkpoint;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fresh;
    throw error;
  }
  if (saved.from !== options.from || saved.to !== options.to || saved.segments !== segments) {
    throw new Error(
      `checkpoint ${options.checkpoint} is of a copy ${saved.from} → ${saved.to} in ${saved.segments} segments: ` +
        'delete it or pass the same tables and --segments',
    );
  }
  return saved;
}

function saveCheckpoint(path: string | undefined, checkpoint: Checkpoint): void {
  if (!path) return;
  // Written beside and renamed: a crash mid-write leaves the previous checkpoint, never half a file.
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, JSON.stringify(checkpoint));
  renameSync(`${path}.tmp`, path);
}

export interface CopyResult {
  /** Items written by this run (a resumed run counts its own). */
  copied: number;
  /** Items written by every run of this checkpoint. */
  copiedInAll: number;
  resumed: boolean;
  segments: number;
}

export async function copyTable(options: CopyOptions): Promise<CopyResult> {
  const { client, from, to } = options;
  const segments = options.segments ?? DEFAULT_SEGMENTS;
  if (from === to) throw new Error('--from and --to name the same table');
  const checkpoint = readCheckpoint(options, segments);
  // JSON keeps a segment not yet started as null: only a saved key or 'done' is progress.
  const resumed = checkpoint.positions.some(Boolean);
  let copied = 0;
  await scanSegments(
    client,
    from,
    segments,
    async (items) => {
      await writeAll(
        client,
        to,
        items.map((Item) => ({ PutRequest: { Item } })),
      );
      copied += items.length;
      checkpoint.copied += items.length;
    },
    {
      start: checkpoint.positions,
      onProgress: (segment, position) => {
        checkpoint.positions[segment] = position;
        saveCheckpoint(options.checkpoint, checkpoint);
      },
      ...(options.stopAfterPages !== undefined ? { stopAfterPages: options.stopAfterPages } : {}),
      ...(options.pageLimit ? { pageLimit: options.pageLimit } : {}),
    },
  );
  return { copied, copiedInAll: checkpoint.copied, resumed, segments };
}

export interface SyncResult {
  /** Old items whose copy was missing or different, put again. */
  put: number;
  /** New items whose key the old table no longer holds, deleted. */
  deleted: number;
  unchanged: number;
}

export async function syncTable(
  options: Pick<CopyOptions, 'client' | 'from' | 'to' | 'segments' | 'pageLimit'> & {
    keyNames: readonly string[];
  },
): Promise<SyncResult> {
  const { client, from, to, keyNames } = options;
  const segments = options.segments ?? DEFAULT_SEGMENTS;
  if (from === to) throw new Error('--from and --to name the same table');
  const result: SyncResult = { put: 0, deleted: 0, unchanged: 0 };
  const scanOptions = options.pageLimit ? { pageLimit: options.pageLimit } : {};
  // Old → new: every item missing from the new table, or different there, is put again.
  await scanSegments(
    client,
    from,
    segments,
    async (items) => {
      const copies = await readAll(
        client,
        to,
        items.map((item) => pickKey(item, keyNames)),
      );
      const copyHash = new Map(copies.map((copy) => [keyText(copy, keyNames), itemHash(copy)]));
      const stale = items.filter((item) => !copyHash.get(keyText(item, keyNames))?.equals(itemHash(item)));
      await writeAll(
        client,
        to,
        stale.map((Item) => ({ PutRequest: { Item } })),
      );
      result.put += stale.length;
      result.unchanged += items.length - stale.length;
    },
    scanOptions,
  );
  // New → old: every item the old table no longer holds (deleted during the copy) goes.
  await scanSegments(
    client,
    to,
    segments,
    async (items) => {
      const keys = items.map((item) => pickKey(item, keyNames));
      const present = new Set((await readAll(client, from, keys)).map((item) => keyText(item, keyNames)));
      const gone = keys.filter((key) => !present.has(keyText(key, keyNames)));
      await writeAll(
        client,
        to,
        gone.map((Key) => ({ DeleteRequest: { Key } })),
      );
      result.deleted += gone.length;
    },
    scanOptions,
  );
  return result;
}

export interface Digest {
  table: string;
  count: number;
  /** Hex of the sum of the items' SHA-256, modulo 2^256. */
  digest: string;
}

const MOD = 1n << 256n;

export async function tableDigest(
  client: DynamoDBClient,
  table: string,
  segments = DEFAULT_SEGMENTS,
): Promise<Digest> {
  let count = 0;
  let sum = 0n;
  await scanSegments(client, table, segments, async (items) => {
    for (const item of items) {
      count++;
      sum = (sum + BigInt(`0x${itemHash(item).toString('hex')}`)) % MOD;
    }
  });
  return { table, count, digest: sum.toString(16).padStart(64, '0') };
}

export interface Verification {
  before: Digest;
  after: Digest;
  equal: boolean;
}

export async function verifyTables(
  client: DynamoDBClient,
  from: string,
  to: string,
  segments = DEFAULT_SEGMENTS,
): Promise<Verification> {
  const [before, after] = await Promise.all([
    tableDigest(client, from, segments),
    tableDigest(client, to, segments),
  ]);
  return { before, after, equal: before.count === after.count && before.digest === after.digest };
}

/** `before 1,234 items / after 1,234 items, equal (content hash 3f2a…)`. */
export function verificationLine(verification: Verification): string {
  const n = (count: number) => count.toLocaleString('en-US');
  const { before, after } = verification;
  return verification.equal
    ? `before ${n(before.count)} items / after ${n(after.count)} items, equal (content hash ${before.digest.slice(0, 16)}…)`
    : `before ${n(before.count)} items / after ${n(after.count)} items, NOT equal (content hash ${before.digest.slice(0, 16)}… vs ${after.digest.slice(0, 16)}…)`;
}
