/**
 * Property-based fuzzing of every operation, in process against DynamoDB Local
 * (test/support/fuzz.ts builds the requests and their oracles).
 *
 * Properties: never a 5xx; every answer is JSON in the contract's shape (the
 * OpenAPI document's schema for that status) and the one the contract
 * prescribes for the request; and a batch of requests changes nothing in the
 * table but the items its successful requests created or deleted (a digest of
 * a full Scan before and after each batch).
 *
 * `npm test` runs a bounded number of cases; `npm run fuzz` sets FUZZ_RUNS
 * (cases per operation) for a long run. FUZZ_SEED replays a reported failure.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeRequest, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import { jsonFaults } from '#shared/http/json-body.ts';
import { operations } from '#shared/operations.ts';
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
} from '../support/fuzz.ts';
import { digestChanges, type TableDigest, tableDigest } from '../support/table-state.ts';
import { createWorld, eventInvoker, type World } from '../support/world.ts';

/** Cases per operation. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const BATCH = 60;
const CONCURRENCY = 8;
/** Per operation: ~10 s for the default runs, proportionally more for `npm run fuzz`. */
const TIMEOUT_MS = Math.max(60_000, RUNS * 40);

let world: World;
let ctx: FuzzContext;
let invoke: ReturnType<typeof eventInvoker>;
const deleted = new Set<string>();

beforeAll(async () => {
  world = await createWorld('fuzz');
  const { demo, admin } = world;
  ctx = await fuzzContext(admin, demo, {
    endpoints: 40,
    label: 'fuzz',
    headerSafe: false,
    issuer: 'https://api.test',
  });
  invoke = eventInvoker(world.depsFor);
}, 120_000);
afterAll(() => world?.drop());

/**
 * The request as API Gateway would deliver it (no header added: a missing Content-Type stays
 * missing); a body marked `base64` arrives base64-encoded, as API Gateway may send any body.
 */
async function send(c: FuzzCase): Promise<FuzzReply> {
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

/** One batch: every answer checked, then the table compared with its state before the batch. */
/** The table as the last batch left it: nothing else writes between batches, so it is the next "before". */
let lastDigest: TableDigest | undefined;

async function runBatch(cases: FuzzCase[]): Promise<void> {
  const before = lastDigest ?? (await tableDigest(world.table));
  lastDigest = undefined;
  const replies = await mapLimit(cases, CONCURRENCY, send);
  const written = new Set<string>();
  const allowed = new Set<string>();
  cases.forEach((c, i) => {
    for (const key of touchedKeys(c, replies[i] as FuzzReply, before)) written.add(key);
    for (const key of mayTouchKeys(c, replies[i] as FuzzReply, before)) allowed.add(key);
  });
  for (const key of written) allowed.add(key);
  checkDeletes(cases, replies, deleted);
  for (const [i, c] of cases.entries()) checkReply(c, replies[i] as FuzzReply);
  const after = await tableDigest(world.table);
  expect(digestChanges(before, after, allowed), 'only successful requests change the table').toEqual([]);
  // …and each success did write what it answered.
  for (const key of written) expect(after.items.get(key), key).not.toBe(before.items.get(key));
  lastDigest = after;
}

const counts = new Map<OperationId, number>();

async function fuzz(operationId: OperationId): Promise<void> {
  const arbitrary = fuzzArbitraries(ctx)[operationId];
  let cases = 0;
  // Each run is a batch drawn from its own seed: the counterexample fast-check reports is that seed
  // (replay one batch with FUZZ_SEED), and the error names the failing request itself.
  await fc.assert(
    fc.asyncProperty(fc.noShrink(fc.noBias(fc.integer())), async (batchSeed) => {
      const batch = fc.sample(arbitrary, { numRuns: BATCH, seed: batchSeed });
      cases += batch.length;
      try {
        await runBatch(batch);
      } catch (error) {
        throw new Error(`${operationId}, batch seed ${batchSeed}: ${(error as Error).message}`);
      }
    }),
    { numRuns: Math.ceil(RUNS / BATCH), ...(SEED !== undefined ? { seed: SEED } : {}) },
  );
  counts.set(operationId, cases);
  expect(cases).toBeGreaterThanOrEqual(RUNS);
}

/** The answers each operation's generator must reach with a definite oracle (one status). */
const mustReach = {
  createClient: [201, 400, 401, 413, 415, 422],
  createSubscription: [201, 401, 403, 413, 415, 422],
  listWallets: [200, 401, 422],
  listSubscriptions: [200, 401, 403, 422],
  listCustomerSubscriptions: [200, 401, 422],
  getCustomerSubscription: [200, 401, 404, 422],
  // A change of one's own is a 200, 403 or 409 depending on what earlier cases did: never definite.
  updateCustomerSubscription: [401, 404, 413, 415, 422],
  cancelCustomerSubscription: [401, 404, 422],
  deleteWebhookEndpoint: [401, 403, 404, 422],
  createCustomerSession: [201, 401, 403, 413, 415, 422],
  getWallet: [200, 401, 404, 422],
  getProduct: [200, 401, 403, 404, 422],
  getSubscription: [200, 401, 403, 404, 422],
  // A change of one of ours is a 200 or, once an earlier case ended it, a 403: never definite.
  updateSubscription: [401, 403, 404, 413, 415, 422],
  revokeSubscription: [401, 403, 404, 422],
  createCustomer: [201, 401, 403, 413, 415, 422],
  getCustomer: [200, 401, 403, 404, 422],
  listCustomers: [200, 401, 403, 422],
  getCustomerExternal: [200, 401, 403, 404],
  // A change of one of ours is a 200 or, when concurrent cases change it too, a 409: never definite.
  updateCustomer: [401, 403, 404, 413, 415, 422],
  updateCustomerExternal: [401, 403, 404, 413, 415, 422],
  // A delete's success cannot be told in advance (another case of the batch may delete first).
  deleteCustomer: [401, 403, 404, 422],
  deleteCustomerExternal: [401, 403, 404, 422],
  createProduct: [201, 401, 403, 413, 415, 422],
  listProducts: [200, 401, 403, 422],
  // A price change of one of ours may meet a product that holds its 100 prices: 200 or 422.
  updateProduct: [200, 401, 403, 404, 413, 415, 422],
  createWebhookEndpoint: [201, 401, 403, 413, 415, 422],
  listWebhookEndpoints: [200, 401, 403, 422],
  getWebhookEndpoint: [200, 401, 403, 404, 422],
  // A change of one of ours is a 200 or, under concurrent changes, a 409: never definite.
  updateWebhookEndpoint: [401, 403, 404, 413, 415, 422],
  resetWebhookEndpointSecret: [401, 403, 404, 422],
  listWebhookDeliveries: [200, 401, 403, 422],
  redeliverWebhookEvent: [202, 401, 403, 404, 422],
  getClient: [200, 401],
  updateClient: [200, 400, 401, 413, 415, 422],
  // A delete's success cannot be told in advance (another case of the batch may delete first).
  deleteClient: [401],
  authorize: [200, 303, 400, 401, 403],
  consent: [303, 400, 401, 403, 413, 415, 422],
  // A success needs a pooled refresh token, each spent once: the first runs may use them all up.
  requestToken: [400, 401, 413, 415],
  revokeToken: [200, 400, 401, 413, 415],
  introspectToken: [200, 400, 401, 413, 415],
  userinfo: [200, 401, 403],
} satisfies Record<OperationId, number[]>;

describe('fuzzing every operation', () => {
  it.each(operations.map((op) => op.operationId))('%s', (operationId) => fuzz(operationId), TIMEOUT_MS);

  it('the oracles are not vacuous: every kind of answer occurred', async () => {
    // Re-sample the same generators and check that they reach successes and each refusal.
    const seen = new Map<OperationId, Set<number>>();
    for (const [operationId, arbitrary] of Object.entries(fuzzArbitraries(ctx)) as [
      OperationId,
      fc.Arbitrary<FuzzCase>,
    ][]) {
      const statuses = new Set<number>();
      for (const c of fc.sample(arbitrary, { numRuns: 1000, seed: 42 })) {
        const [only, ...others] = c.oracle.statuses;
        if (only !== undefined && others.length === 0) statuses.add(only);
      }
      seen.set(operationId, statuses);
    }
    for (const [operationId, statuses] of Object.entries(mustReach)) {
      expect([...(seen.get(operationId as OperationId) ?? [])].sort(), operationId).toEqual(
        expect.arrayContaining(statuses),
      );
    }
    // Cases run by the property tests above, when they ran in this process.
    for (const [operationId, n] of counts) expect(n, operationId).toBeGreaterThanOrEqual(RUNS);
  });

  it('the generators reach every class of issue 10, not only its five examples', () => {
    const arbitraries = fuzzArbitraries(ctx);
    const posts = [
      ...fc.sample(arbitraries.createClient, { numRuns: 1000, seed: 10 }),
      ...fc.sample(arbitraries.createSubscription, { numRuns: 1000, seed: 10 }),
    ];
    const bytes = posts.map((c) => c.request.body).filter((b): b is Buffer => Buffer.isBuffer(b));
    const texts = posts.map((c) => c.request.body).filter((b): b is string => typeof b === 'string');
    const count = (test: (t: string) => boolean) => texts.filter(test).length;
    // Bytes that are not UTF-8, at many different positions.
    expect(bytes.length).toBeGreaterThan(20);
    expect(
      new Set(bytes.map((b) => b.findIndex((byte, i) => byte !== Buffer.from(b.toString())[i]))).size,
    ).toBeGreaterThan(10);
    // Base64 event bodies as well as text ones.
    expect(posts.filter((c) => c.request.base64).length).toBeGreaterThan(300);
    // Integer literals past ±(2^53−1), written digit for digit, and number literals past the double range.
    expect(count((t) => /[:[,]-?\d{17,}[,}\]]/.test(t))).toBeGreaterThan(20);
    expect(count((t) => /[:[,]-?\d(?:\.\d+)?e-?4\d\d[,}\]]/i.test(t))).toBeGreaterThan(5);
    // Duplicate keys, top level and nested (found with the parser itself: this counts generated
    // cases, the oracles stay independent of it), and lone surrogate escapes.
    const duplicates = texts.flatMap((t) => {
      try {
        JSON.parse(t);
      } catch {
        return [];
      }
      return jsonFaults(t).filter((f) => f.type === 'duplicate_key');
    });
    expect(duplicates.filter((f) => f.loc.length === 2).length).toBeGreaterThan(20);
    expect(duplicates.filter((f) => f.loc[1] === 'metadata').length).toBeGreaterThan(5);
    expect(count((t) => t.includes('\\ud') || t.includes('\\uD'))).toBeGreaterThan(20);
    // URI fields with every scheme and host-less or user-info authorities.
    for (const uri of [
      'javascript:',
      'JavaScript:',
      'data:',
      'file:',
      'vbscript:',
      'blob:',
      'about:',
      'ftp:',
      'wss:',
      'mailto:',
      'myapp:',
      'HtTp:',
    ]) {
      expect(
        count((t) => t.includes(`"${uri}`)),
        uri,
      ).toBeGreaterThan(0);
    }
    for (const uri of [':///', '://"', '://:443', ':cb"', '://user@', '@evil.example']) {
      expect(
        count((t) => t.includes(uri)),
        uri,
      ).toBeGreaterThan(0);
    }
  });
});

describe('known shapes, pinned', () => {
  const pat = () => world.demo.personal_access_token;

  it('deeply nested input is refused without echoing it (was a 500: JSON.stringify overflowed)', async () => {
    const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
    const reply = await send({
      operationId: 'createClient',
      request: {
        method: 'POST',
        url: '/v1/oauth2/register',
        headers: { authorization: `Bearer ${pat()}`, 'content-type': 'application/json' },
        body: `{"redirect_uris":["https://a.example/cb"],"client_name":${deep}}`,
      },
      oracle: { statuses: [422] },
    });
    expect(reply.status).toBe(422);
    expect((reply.body as { detail: unknown[] }).detail).toEqual([
      { loc: ['body', 'client_name'], msg: 'Input should be a valid string', type: 'string_type' },
    ]);
  });

  it('a body of 100 000 faulty values answers at most 100 detail items (was 22 MB, past Lambda’s 6 MB)', async () => {
    const reply = await send({
      operationId: 'createClient',
      request: {
        method: 'POST',
        url: '/v1/oauth2/register',
        headers: { authorization: `Bearer ${pat()}`, 'content-type': 'application/json' },
        body: `{"redirect_uris":[${Array(100_000).fill('1').join(',')}],"client_name":"x"}`,
      },
      oracle: { statuses: [422] },
    });
    expect(reply.status).toBe(422);
    expect((reply.body as { detail: unknown[] }).detail).toHaveLength(100);
    // The one item about the list itself echoes the list (200 kB); the rest are small.
    expect(reply.raw.length).toBeLessThan(200_000 + 64 * 1024);
  });

  // Regression: `new URL()` threw on URIs the RFC 3986 `uri` format accepts (a 500).
  it('redirect URIs WHATWG URL cannot parse are refused, not a 500', async () => {
    for (const uri of ['http://999.999.999.999/cb', 'https://a.example:99999/cb', 'http://']) {
      const reply = await world.call('POST', '/v1/oauth2/register', {
        token: pat(),
        body: { redirect_uris: [uri], client_name: randomUUID() },
      });
      expect(reply.status, uri).toBeLessThan(500);
    }
  });
});
