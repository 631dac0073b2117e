/**
 * The in-process fuzz suite, in two sizes over one body of code: the smoke of the fast tier
 * (test/integration/fuzz.test.ts, one batch per operation) and the long run of `npm run test:fuzz`
 * (test/integration/fuzz-full.test.ts, FUZZ_RUNS cases per operation). test/support/fuzz.ts builds
 * the requests and their oracles.
 *
 * Each operation runs in a table of its own while it runs, starting from one snapshot (the run's
 * demo seed and the fuzzing context built over it once); after it the table is put back to that
 * snapshot (only what the operation wrote is undone) for the next operation. No table grows with the
 * other operations' writes, so the full Scan after each batch reads a seed-sized table, and an
 * operation's cases meet the same starting state whatever ran before them, with handlers of their
 * own. That makes a failure replayable: the error names
 * the seed, and FUZZ_SEED=<seed> draws the same batches again from the same state.
 *
 * Properties: never a 5xx; every answer is JSON in the contract's shape and the one the contract
 * prescribes for the request, with headers an HTTP server can write; and a batch changes nothing in
 * the table but the items its successful requests created, changed or deleted (a full Scan after it).
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  DynamoDBClient,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeRequest, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import { operations } from '#shared/operations.ts';
import { dynamodbEndpoint, LOCAL_CREDENTIALS, LOCAL_REGION, seedSnapshot } from './dynamodb.ts';
import {
  checkDeletes,
  checkReply,
  type FuzzCase,
  type FuzzContext,
  type FuzzReply,
  fuzzArbitraries,
  fuzzContext,
  mapLimit,
  mayTouchKeys,
  type OperationId,
  touchedKeys,
} from './fuzz.ts';
import {
  canonical,
  digestChanges,
  type Item,
  itemKey,
  type TableDigest,
  tableDigest,
} from './table-state.ts';
import { createWorld, eventInvoker, type World } from './world.ts';

/** Cases in one batch: the smoke runs one per operation. */
export const FUZZ_BATCH = 60;
const CONCURRENCY = 8;

export interface FuzzSuiteOptions {
  /** Cases per operation when FUZZ_RUNS does not say. */
  defaultRuns: number;
  /** The test file, for the replay command a failure prints. */
  file: string;
}

export interface FuzzSuite {
  /** Cases per operation of this run. */
  runs: number;
  /** The seed of this run: FUZZ_SEED, or one drawn now and printed with any failure. */
  seed: number;
  /** The fuzzing context as built (clone it before drawing: arbitraries spend its pools). */
  context(): FuzzContext;
  /** A world over its own table, filled like every operation's, with the context's objects in it. */
  world(prefix: string): Promise<World>;
  /** Cases each operation ran in this process (for the not-vacuous check). */
  counts: Map<OperationId, number>;
}

/** FUZZ_SEED replays a run; without it a seed is drawn, so that it can be printed. */
function runSeed(): number {
  const given = process.env.FUZZ_SEED;
  if (given === undefined || given === '') return (Math.random() * 0x1_0000_0000) | 0;
  const seed = Number(given);
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${given}`);
  return seed;
}

async function scanRaw(client: DynamoDBClient, tableName: string): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** Puts and deletes in batches of 25, retrying what DynamoDB Local leaves unprocessed. */
async function writeAll(
  client: DynamoDBClient,
  tableName: string,
  puts: Record<string, AttributeValue>[],
  deletes: Record<string, AttributeValue>[],
): Promise<void> {
  type Request = NonNullable<BatchWriteItemCommand['input']['RequestItems']>[string][number];
  const requests: Request[] = [
    ...puts.map((Item) => ({ PutRequest: { Item } })),
    ...deletes.map((Key) => ({ DeleteRequest: { Key } })),
  ];
  const batches: Request[][] = [];
  for (let i = 0; i < requests.length; i += 25) batches.push(requests.slice(i, i + 25));
  await Promise.all(
    batches.map(async (batch) => {
      let pending = batch;
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 10) throw new Error('DynamoDB Local kept items of the fuzz snapshot unprocessed');
        const result = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [tableName]: pending } }),
        );
        pending = result.UnprocessedItems?.[tableName] ?? [];
      }
    }),
  );
}

const keyOf = (item: Record<string, AttributeValue>) => itemKey(unmarshall(item) as Item);

export function defineFuzzSuite(options: FuzzSuiteOptions): FuzzSuite {
  const runs = Number(process.env.FUZZ_RUNS ?? options.defaultRuns);
  /** Cases per batch: FUZZ_BATCH, or all of a smaller run in one. */
  const batchSize = Math.min(FUZZ_BATCH, runs);
  const seed = runSeed();
  /** Per operation: ~10 s a batch, with room for a loaded machine. */
  const timeoutMs = Math.max(180_000, Math.ceil(runs / FUZZ_BATCH) * 15_000);
  const counts = new Map<OperationId, number>();

  let client: DynamoDBClient;
  let ctx: FuzzContext;
  /** What each operation's table holds beyond the seed createWorld copies in, and what it lacks. */
  let overlay: { puts: Record<string, AttributeValue>[]; deletes: Record<string, AttributeValue>[] };
  /** Every operation's table as it starts: the first batch's "before". */
  let start: TableDigest;
  /** The same, as raw items by key: what a reused table is put back to. */
  let startItems: Map<string, Record<string, AttributeValue>>;
  /**
   * Worlds between operations. Filling a table (seed and context, about 1,500 items through five
   * LSIs) cost DynamoDB Local about as much as the operation's batch; a table put back to the start
   * (what the operation wrote deleted, what it changed or deleted put again) costs what it wrote.
   */
  const idle: World[] = [];
  const made: World[] = [];

  beforeAll(async () => {
    client = new DynamoDBClient({
      region: LOCAL_REGION,
      endpoint: dynamodbEndpoint(),
      credentials: LOCAL_CREDENTIALS,
    });
    // As the functions' clients (shared/data/dynamo.ts): no walk of every Scan through the SDK's log filter.
    client.middlewareStack.remove('loggerMiddleware');
    // The context (pools of endpoints, clients, customers, tokens…) is built once, over the seed,
    // and read back whole: each operation's table starts from exactly this.
    const base = await createWorld('fuzz-context');
    try {
      ctx = await fuzzContext(base.admin, base.demo, {
        label: 'fuzz',
        headerSafe: false,
        issuer: 'https://api.test',
        // One batch per operation needs smaller pools than many do: each operation's table is
        // filled with the whole context, so its size is paid once per operation.
        ...(runs <= FUZZ_BATCH
          ? { endpoints: 12, refreshTokens: 10, products: 8, subscriptions: 4 }
          : { endpoints: 13 }),
      });
      const items = await scanRaw(client, base.table.name);
      const seeded = new Map(seedSnapshot().items.map((item) => [keyOf(item), canonical(unmarshall(item))]));
      const kept = new Set<string>();
      const puts = items.filter((item) => {
        const key = keyOf(item);
        kept.add(key);
        return seeded.get(key) !== canonical(unmarshall(item));
      });
      const deletes = seedSnapshot()
        .items.filter((item) => !kept.has(keyOf(item)))
        .map((item) => ({ PK: item.PK as AttributeValue, SK: item.SK as AttributeValue }));
      overlay = { puts, deletes };
      const digest = new Map(items.map((item) => [keyOf(item), canonical(unmarshall(item))]));
      start = { count: digest.size, items: digest };
      startItems = new Map(items.map((item) => [keyOf(item), item]));
    } finally {
      await base.drop();
    }
  }, 300_000);
  afterAll(async () => {
    await Promise.all(made.map((w) => w.drop()));
    client?.destroy();
  });

  async function world(prefix: string): Promise<World> {
    const made = await createWorld(prefix);
    try {
      await writeAll(client, made.table.name, overlay.puts, overlay.deletes);
      return made;
    } catch (error) {
      await made.drop();
      throw error;
    }
  }

  /**
   * The request as API Gateway would deliver it (no header added: a missing Content-Type stays
   * missing); a body marked `base64` arrives base64-encoded, as API Gateway may send any body.
   */
  async function send(invoke: ReturnType<typeof eventInvoker>, c: FuzzCase): Promise<FuzzReply> {
    const { method, url, headers, body, base64 } = c.request;
    const path = url.split('?')[0] as string;
    const match = routeRequest(method, path);
    if (!match) throw new Error(`no route for ${method} ${path}`);
    const event = toApiGatewayEvent(
      {
        method,
        url,
        httpVersion: '1.1',
        rawHeaders: Object.entries({ host: 'api.test', ...headers }).flat(),
        socket: { remoteAddress: '127.0.0.1' },
      },
      body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body),
      { routeKey: match.routeKey, pathParameters: match.pathParameters },
    );
    if (base64 && event.body !== undefined && !event.isBase64Encoded) {
      event.body = Buffer.from(event.body).toString('base64');
      event.isBase64Encoded = true;
    }
    const reply = await invoke(event);
    return { status: reply.status, headers: reply.headers, raw: reply.raw ?? '', body: reply.body };
  }

  /**
   * Headers a server can write: the local server's `setHeader` throws on any other (a name that is
   * not a token, a value with CR, LF, NUL or a character past Latin-1), which the HTTP fuzz suite
   * met as a failed request; in process the reply object would carry it silently.
   */
  function checkHeaders(c: FuzzCase, reply: FuzzReply): void {
    for (const [name, value] of Object.entries(reply.headers)) {
      expect(
        () => {
          validateHeaderName(name);
          validateHeaderValue(name, value);
        },
        `${c.request.method} ${c.request.url.slice(0, 100)} → header ${name}: ${JSON.stringify(value).slice(0, 200)}`,
      ).not.toThrow();
    }
  }

  /** A table in the start state: an idle one, or a new one while every other is in use. */
  async function acquire(): Promise<World> {
    const reused = idle.pop();
    if (reused) return reused;
    const fresh = await world('fuzz');
    made.push(fresh);
    return fresh;
  }

  /**
   * Puts a table back to the start, writing only what differs, and makes it idle. `now` is the
   * table as the operation's last check read it; without it (the operation failed part-way) a full
   * Scan reads it.
   */
  async function release(used: World, now?: TableDigest): Promise<void> {
    const items = now?.items ?? (await tableDigest(used.table)).items;
    const puts: Record<string, AttributeValue>[] = [];
    const deletes: Record<string, AttributeValue>[] = [];
    for (const [key, text] of items) {
      const original = startItems.get(key);
      if (!original) {
        const { PK, SK } = JSON.parse(text) as { PK: string; SK: string };
        deletes.push({ PK: { S: PK }, SK: { S: SK } });
      } else if (start.items.get(key) !== text) puts.push(original);
    }
    for (const [key, original] of startItems) if (!items.has(key)) puts.push(original);
    await writeAll(client, used.table.name, puts, deletes);
    idle.push(used);
  }

  /**
   * One operation: a table in the start state, its own copy of the context and its own handlers
   * (nothing held in memory carries over from another operation), FUZZ_RUNS cases in batches.
   */
  async function fuzz(operationId: OperationId): Promise<void> {
    const own = await acquire();
    /** The table as the last batch left it: nothing else writes between batches. */
    let before: TableDigest = start;
    let passed = false;
    try {
      const invoke = eventInvoker(own.depsFor);
      const arbitrary = fuzzArbitraries(structuredClone(ctx))[operationId];
      const deleted = new Set<string>();
      let cases = 0;
      const runBatch = async (batch: FuzzCase[]) => {
        const replies = await mapLimit(batch, CONCURRENCY, (c) => send(invoke, c));
        const written = new Set<string>();
        const allowed = new Set<string>();
        batch.forEach((c, i) => {
          for (const key of touchedKeys(c, replies[i] as FuzzReply, before)) written.add(key);
          for (const key of mayTouchKeys(c, replies[i] as FuzzReply, before)) allowed.add(key);
        });
        for (const key of written) allowed.add(key);
        checkDeletes(batch, replies, deleted);
        for (const [i, c] of batch.entries()) {
          checkReply(c, replies[i] as FuzzReply);
          checkHeaders(c, replies[i] as FuzzReply);
        }
        const after = await tableDigest(own.table);
        expect(digestChanges(before, after, allowed), 'only successful requests change the table').toEqual(
          [],
        );
        // …and each success did write what it answered.
        for (const key of written) expect(after.items.get(key), key).not.toBe(before.items.get(key));
        before = after;
      };
      try {
        // Each run is a batch drawn from its own seed, and the run's seed draws those: the same
        // FUZZ_SEED, the same batches from the same table and context.
        await fc.assert(
          fc.asyncProperty(fc.noShrink(fc.noBias(fc.integer())), async (batchSeed) => {
            const batch = fc.sample(arbitrary, { numRuns: batchSize, seed: batchSeed });
            cases += batch.length;
            try {
              await runBatch(batch);
            } catch (error) {
              throw new Error(`${operationId}, batch seed ${batchSeed}: ${(error as Error).message}`);
            }
          }),
          { numRuns: Math.ceil(runs / batchSize), seed },
        );
      } catch (error) {
        // fast-check's report names the run's seed and the batch's; the failed check is its cause.
        const replay = `FUZZ_SEED=${seed} FUZZ_RUNS=${runs} npx vitest run ${options.file} -t '${operationId}$'`;
        console.error(`fuzz: ${operationId} failed with FUZZ_SEED=${seed}; replay: ${replay}`);
        throw new Error(`FUZZ_SEED=${seed} (replay: ${replay})\n${(error as Error).message}`, {
          cause: error,
        });
      }
      counts.set(operationId, cases);
      expect(cases).toBeGreaterThanOrEqual(runs);
      passed = true;
    } finally {
      await release(own, passed ? before : undefined);
    }
  }

  describe('fuzzing every operation, each in a table of its own while it runs', () => {
    it.concurrent.each(operations.map((op) => op.operationId))(
      '%s',
      (operationId) => fuzz(operationId),
      timeoutMs,
    );
    it('every table the operations shared was put back to the start', async () => {
      for (const used of idle)
        expect(digestChanges(start, await tableDigest(used.table)), used.table.name).toEqual([]);
    });
  });

  return { runs, seed, context: () => ctx, world, counts };
}
