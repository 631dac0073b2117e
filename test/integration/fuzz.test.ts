/**
 * The fuzz smoke of the fast tier: every operation of shared/operations.ts, one batch of
 * generated requests each (FUZZ_RUNS scales it), in process against DynamoDB Local, each in a fresh
 * table filled from the seed and the fuzzing context (test/support/fuzz-suite.ts). The long run is
 * test/integration/fuzz-full.test.ts and, over HTTP, test/e2e/fuzz-http.test.ts.
 *
 * A failure prints its seed; FUZZ_SEED=<seed> replays it. Beside the batches: the generators reach
 * every answer their oracles name and every class of issue 10, shapes once found are pinned, and
 * what only the HTTP fuzz suite checked is pinned over a real local server (head size, routing,
 * bodies that are not UTF-8, the request id).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, type LambdaHandler, startApiServer } from '#scripts/local/server.ts';
import { loadOpenApi } from '#scripts/openapi.ts';
import { jsonFaults } from '#shared/http/json-body.ts';
import { operations } from '#shared/operations.ts';
import type { Dependencies } from '#shared/runtime.ts';
import type { FuzzCase, OperationId } from '../support/fuzz.ts';
import { documentModelArb, documentModelReaches, fuzzArbitraries } from '../support/fuzz.ts';
import { defineFuzzSuite, FUZZ_BATCH } from '../support/fuzz-suite.ts';
import { nonUtf8BodiesRefused, sendTo, unknownRoutesRefused } from '../support/http-probes.ts';
import { digestChanges, tableDigest } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

const suite = defineFuzzSuite({ defaultRuns: FUZZ_BATCH, file: 'test/integration/fuzz.test.ts' });

/**
 * The answers each hand-modelled operation's generator must reach with a definite oracle (one
 * status); an operation on the document's model must reach what that model makes definite
 * (`documentModelReaches`: its 401, and its success when the request names nothing). Every status
 * here is one the document lists for the operation (checked below).
 */
const handReach: Partial<Record<OperationId, number[]>> = {
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
  ingestEvents: [200, 401, 403, 413, 415, 422],
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
  createMeter: [201, 401, 403, 413, 415, 422],
  updateMeter: [200, 401, 403, 404, 413, 415, 422],
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
  listAuthorizedClients: [200, 401],
  revokeAuthorizedClient: [401, 404],
};
const mustReach = Object.fromEntries(
  operations.map((op) => [op.operationId, handReach[op.operationId] ?? documentModelReaches(op.operationId)]),
) as Record<OperationId, number[]>;

describe('the generators', () => {
  it('must reach only statuses the document lists, and something for every operation', () => {
    const listed = new Map<string, Set<number>>();
    for (const item of Object.values(loadOpenApi().paths))
      for (const op of Object.values(item))
        listed.set(op.operationId, new Set(Object.keys(op.responses).map(Number)));
    for (const op of operations) {
      const statuses = mustReach[op.operationId];
      expect(statuses.length, op.operationId).toBeGreaterThan(0);
      for (const status of statuses)
        expect([...(listed.get(op.operationId) ?? [])], op.operationId).toContain(status);
    }
  });

  it('the oracles are not vacuous: every kind of answer occurred', async () => {
    // Re-sample the same generators and check that they reach successes and each refusal.
    const seen = new Map<OperationId, Set<number>>();
    for (const [operationId, arbitrary] of Object.entries(
      fuzzArbitraries(structuredClone(suite.context())),
    ) as [OperationId, fc.Arbitrary<FuzzCase>][]) {
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
    // Every generator sampled 1,000 times: 27 s on a loaded 2-core machine, near the default 30 s.
  }, 120_000);

  it('over HTTP no path parameter is a dot segment (a client normalises `/v1/events/./` into List Events)', () => {
    // Found by fuzz-http (getEvent answered by List Events, judged against Get Event's schema).
    const overHttp = { ...structuredClone(suite.context()), headerSafe: true };
    // Every operation the document's model can draw for (bearer credentials) with a path parameter.
    const withParameters = operations.filter(
      (op) =>
        /\{\w+\}/.test(op.path) &&
        (op.credential === 'personal_access_token' || op.credential === 'customer_session'),
    );
    expect(withParameters.map((op) => op.operationId)).toContain('getEvent');
    for (const op of withParameters) {
      const urls = fc
        .sample(documentModelArb(overHttp, op.operationId), { numRuns: 2000, seed: 7 })
        .map((c) => c.request.url.split('?')[0] as string);
      expect(
        urls.filter((url) => url.split('/').some((part) => /^\.+$/.test(part))),
        op.operationId,
      ).toEqual([]);
    }
  });

  it('the generators reach every class of issue 10, not only its five examples', () => {
    const arbitraries = fuzzArbitraries(structuredClone(suite.context()));
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

let world: World;
beforeAll(async () => {
  world = await createWorld('fuzz-pinned');
});
afterAll(() => world?.drop());

describe('known shapes, pinned', () => {
  const pat = () => world.demo.personal_access_token;

  it('deeply nested input is refused without echoing it (was a 500: JSON.stringify overflowed)', async () => {
    const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
    const reply = await world.call('POST', '/v1/oauth2/register', {
      token: pat(),
      body: `{"redirect_uris":["https://a.example/cb"],"client_name":${deep}}`,
    });
    expect(reply.status).toBe(422);
    expect((reply.body as { detail: unknown[] }).detail).toEqual([
      { loc: ['body', 'client_name'], msg: 'Input should be a valid string', type: 'string_type' },
    ]);
  });

  it('a body of 100 000 faulty values answers at most 100 detail items (was 22 MB, past Lambda’s 6 MB)', async () => {
    const reply = await world.call('POST', '/v1/oauth2/register', {
      token: pat(),
      body: `{"redirect_uris":[${Array(100_000).fill('1').join(',')}],"client_name":"x"}`,
    });
    expect(reply.status).toBe(422);
    expect((reply.body as { detail: unknown[] }).detail).toHaveLength(100);
    // The one item about the list itself echoes the list (200 kB); the rest are small.
    expect((reply.raw ?? '').length).toBeLessThan(200_000 + 64 * 1024);
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

/**
 * Checks the HTTP fuzz suite (test/e2e/fuzz-http.test.ts, long tier) makes and the batches above
 * cannot: the real local server in front of the real handlers (over the pinned world's table).
 */
describe('what only the HTTP fuzz suite checked, pinned over the local server', () => {
  let server: ApiServer;
  beforeAll(async () => {
    server = await startApiServer({
      port: 0,
      quiet: true,
      loadHandler: async (fn) => {
        const module = (await import(resolve(import.meta.dirname, '../..', fn.entry))) as {
          createHandler?: (deps: Dependencies) => LambdaHandler;
          handler: LambdaHandler;
        };
        return module.createHandler ? module.createHandler(world.depsFor(fn.name)) : module.handler;
      },
    });
  });
  afterAll(() => server?.close());

  const http = sendTo(() => server.url);

  it('a request head at an HTTP API’s quota (10,240 bytes) reaches its function: its 401, not a 431', async () => {
    // The HTTP fuzz suite lets a 431 pass only for a head over this quota (one an HTTP API refuses
    // too); the local server must let every smaller head through to the function, as API Gateway does.
    const path = '/v1/subscriptions/';
    const line = `GET ${path} HTTP/1.1`;
    const prefix = 'Bearer polar_pat_';
    const filler = 10_240 - Buffer.byteLength(line) - Buffer.byteLength(`authorization: ${prefix}`);
    const headers = { authorization: `${prefix}${'a'.repeat(filler)}` };
    expect(Buffer.byteLength(line) + Buffer.byteLength(`authorization: ${headers.authorization}`)).toBe(
      10_240,
    );
    const reply = await http('GET', path, headers);
    expect(reply.status, reply.raw.slice(0, 200)).toBe(401);
    expect(reply.headers['www-authenticate']).toMatch(/^Bearer realm="polar"/);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    // Deployed HTTP APIs stamp every answer with a request id; the local one does too.
    expect(reply.headers['apigw-requestid']).toBeTruthy();
  });

  it('unknown routes and wrong methods: 404 NotFound / 405 MethodNotAllowed, JSON, nothing changed', async () => {
    const before = await tableDigest(world.table);
    await unknownRoutesRefused({
      send: http,
      token: world.demo.personal_access_token,
      numRuns: 40,
      seed: suite.seed,
    });
    // Bodiless probes: even a known route and method cannot create or delete anything here.
    expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
  });

  it('bodies that are not valid UTF-8 are refused like any other bad JSON, never a 5xx', async () => {
    await nonUtf8BodiesRefused({
      send: http,
      token: world.demo.personal_access_token,
      numRuns: 20,
      seed: suite.seed,
    });
  });
});
