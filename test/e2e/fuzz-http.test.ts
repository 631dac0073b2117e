import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminContext } from '#scripts/admin/commands.ts';
import type { LocalStack } from '#scripts/local/stack.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { operations } from '#shared/operations.ts';
import { testWebhooks } from '../support/dynamodb.ts';
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
  touchedKeys,
} from '../support/fuzz.ts';
import { nonUtf8BodiesRefused, sendTo, unknownRoutesRefused } from '../support/http-probes.ts';
import { startLocalApi } from '../support/local-api.ts';
import { digestChanges, type FollowedTable, followTable, tableDigest } from '../support/table-state.ts';

const CASES_PER_OPERATION = Number(process.env.FUZZ_HTTP_RUNS ?? 120);
const BATCH = 40;

let stack: LocalStack;
let admin: AdminContext;
let ctx: FuzzContext;
let followed: FollowedTable;
const deleted = new Set<string>();

beforeAll(async () => {
  // Without the webhook pipeline: its deliveries would change the table behind the requests' backs.
  stack = await startLocalApi('fuzz-http', { webhooks: false });
  const { demo } = stack;
  admin = {
    table: { doc: createDocumentClient({ endpoint: demo.dynamodb_endpoint }), name: demo.table_name },
    now: () => new Date(),
    webhooks: testWebhooks(stack.keySet),
  };
  ctx = await fuzzContext(admin, demo, {
    endpoints: 10,
    label: 'http-fuzz',
    headerSafe: true,
    issuer: demo.base_url,
  });
  followed = await followTable(admin.table);
});
afterAll(async () => {
  followed?.close();
  admin?.table.doc.destroy();
  await stack?.stop();
});

// A 303 to a client's redirect URI is the answer under test, not a place to go: sendTo never follows one.
const send = sendTo(() => stack.demo.base_url);

/** An HTTP API's quota on the request line and header values together. */
const HTTP_API_HEAD_LIMIT = 10_240;
/** The request line and headers the case sends (fetch adds a few of its own). */
const headBytes = ({ request }: FuzzCase) =>
  Buffer.byteLength(`${request.method} ${request.url} HTTP/1.1`) +
  Object.entries(request.headers).reduce((n, [name, value]) => n + Buffer.byteLength(`${name}: ${value}`), 0);

/** The table before and after a batch, kept from its stream (a full Scan proves it after each operation). */
async function runBatch(cases: FuzzCase[]): Promise<void> {
  const before = await followed.digest();
  const replies: FuzzReply[] = await mapLimit(cases, 6, (c) =>
    send(c.request.method, c.request.url, c.request.headers, c.request.body),
  );
  const allowed = new Set(
    cases.flatMap((c, i) => [
      ...touchedKeys(c, replies[i] as FuzzReply, before),
      ...mayTouchKeys(c, replies[i] as FuzzReply, before),
    ]),
  );
  checkDeletes(cases, replies, deleted);
  cases.forEach((c, i) => {
    const reply = replies[i] as FuzzReply;
    // Node's HTTP parser refuses a head over 16 KB (431, before any handler). An HTTP API refuses one
    // over 10,240 bytes, so such a request never reaches the functions deployed; the in-process fuzz
    // suite checks what they would answer. A 431 for a smaller head is still a failure.
    if (reply.status === 431) {
      expect(headBytes(c), `431 for ${c.request.method} ${c.request.url.slice(0, 100)}`).toBeGreaterThan(
        HTTP_API_HEAD_LIMIT,
      );
      return;
    }
    checkReply(c, reply);
    // Deployed HTTP APIs stamp every answer with a request id; the local one does too.
    expect(reply.headers['apigw-requestid']).toBeTruthy();
  });
  expect(digestChanges(before, await followed.digest(), allowed)).toEqual([]);
}

describe('fuzzing over HTTP', () => {
  it.each(operations.map((op) => op.operationId))(
    '%s',
    async (operationId) => {
      const arbitrary = fuzzArbitraries(ctx)[operationId];
      await fc.assert(
        fc.asyncProperty(fc.noShrink(fc.noBias(fc.integer())), async (seed) => {
          try {
            await runBatch(fc.sample(arbitrary, { numRuns: BATCH, seed }));
          } catch (error) {
            throw new Error(`${operationId}, batch seed ${seed}: ${(error as Error).message}`);
          }
        }),
        { numRuns: Math.ceil(CASES_PER_OPERATION / BATCH) },
      );
      await followed.verify();
    },
    60_000,
  );

  it('unknown routes and wrong methods: 404 NotFound / 405 MethodNotAllowed, JSON, nothing changed', async () => {
    const before = await tableDigest(admin.table);
    await unknownRoutesRefused({ send, token: stack.demo.personal_access_token, numRuns: 80 });
    // Bodiless probes: even a known route and method cannot create or delete anything here.
    expect(digestChanges(before, await tableDigest(admin.table))).toEqual([]);
  });

  it('bodies that are not valid UTF-8 are refused like any other bad JSON, never a 5xx', async () => {
    await nonUtf8BodiesRefused({ send, token: stack.demo.personal_access_token, numRuns: 40 });
  });
});
