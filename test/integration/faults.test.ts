/**
 * Fault injection at the DynamoDB client (test/support/faults.ts), the fast tier. The production
 * clients' retries lose only their back-off wait (`withoutRetryDelay`: the same attempts and
 * decisions, no sleeping). Every kind at every call of every operation, with the production
 * back-off, is test/integration/faults-matrix.test.ts (`npm run test:faults`); each defect it finds
 * is pinned here:
 * - a kind of fault answered otherwise than its class (a 500, no retry): every kind at every call
 *   of one operation;
 * - a call outside `run` (a raw SDK error, a 500), or a failure at one call leaving part of a
 *   change behind: a persistent fault at every call of every operation (route table), its class
 *   rotating;
 * - a write that is not idempotent under a lost answer, or a conflict not sent again: a lost
 *   answer (healed, persistent) and a conflict (healed) at every write;
 * - a function whose client retries otherwise: a healed fault at every operation's last call;
 * - the attempt counts (3 per call, 3 per conflicting write): in every case; the no-wait clients
 *   retrying as the production ones: the same cases with the production back-off;
 * - an unexpected error leaking, the 503 missing the function timeout: the last two tests.
 *
 * What must hold: retryable faults are retried (the SDK's attempts are counted
 * at the middleware) and then succeed; a fault that outlasts the retries is the
 * contract's 503 with Retry-After, never a 500; and the table shows each write
 * exactly once or not at all (no subscription without its customer and
 * product, no half-deleted endpoint, no duplicate from a retried write), and
 * a change's webhook events (the outbox) exactly when the change is there.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  expectServiceUnavailable,
  MAX_ATTEMPTS,
  opNamed,
  ops,
  runCases,
  send,
  useFaultWorld,
} from '../support/fault-operations.ts';
import {
  CLASS_REPRESENTATIVES,
  FAULT_KINDS,
  type Fault,
  fastFaultCases,
  faultCases,
  faultyApi,
  isWrite,
} from '../support/faults.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('faults');
  await useFaultWorld(world);
});
afterAll(() => world?.drop());

/** Without back-off waits the cases spend their time in DynamoDB Local: a few at a time. */
const CONCURRENCY = 8;

/**
 * The production clients' retries without their back-off wait; the SDK's own request timeouts, so
 * that a slow answer of a loaded machine's DynamoDB Local is not taken for a fault (the functions'
 * timeouts are the last test's, on a fake clock).
 */
const FAST = { retryDelay: 'none', requestTimeouts: 'patient' } as const;

/** The API functions' timeout (infra/function.ts). */
const FUNCTION_TIMEOUT_MS = 10_000;

describe('fault injection at the DynamoDB client', () => {
  let errors: ReturnType<typeof vi.spyOn>;
  beforeAll(() => {
    // 503s are logged for operators; keep the test output readable.
    errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  });
  afterAll(() => errors.mockRestore());

  it('without faults, each operation makes the DynamoDB calls the cases target', async () => {
    // An operation on its card's sample had its calls recorded just now (useFaultWorld): the others.
    for (const op of ops.filter((candidate) => !candidate.recorded)) {
      const { reply, request, injector } = await send(op, undefined, FAST);
      expect(reply.status, op.operationId).toBe(op.success);
      expect(injector.attemptsByCall()).toEqual(op.calls.map((name) => [name, 1]));
      await request.verify(reply, 'done');
    }
    // Some forty requests in a row with their set-up: a loaded machine's DynamoDB Local needs more than 30 s.
  }, 120_000);

  it('a fault at every call of every operation, of each class where it matters', async () => {
    const all = fastFaultCases(ops);
    const failures = await runCases(all, { ...FAST, concurrency: CONCURRENCY });
    expect(failures, `${failures.length} of ${all.length} cases failed`).toEqual([]);
    // Every call of every operation of the route table, and every class at reads and at writes.
    const sites = (cases: typeof all) => new Set(cases.map((c) => `${c.op.operationId} ${c.call}`));
    expect(sites(all)).toEqual(sites(faultCases(ops, CLASS_REPRESENTATIVES)));
    for (const write of [false, true]) {
      const expected = CLASS_REPRESENTATIVES.filter((kind) => write || kind !== 'transaction-conflict');
      const persistent = all.filter(
        (c) => c.mode === 'persistent' && isWrite(c.op.calls[c.call - 1] as string) === write,
      );
      expect(new Set(persistent.map((c) => c.kind)), write ? 'writes' : 'reads').toEqual(new Set(expected));
    }
    const healed = new Set(all.filter((c) => c.mode === 'healed').map((c) => c.kind));
    expect(healed).toEqual(new Set(CLASS_REPRESENTATIVES));
  }, 300_000);

  // A read, then a transaction with its outbox items: every kind has a call it can hit. (Looked up
  // when a test runs: the operations are filled by useFaultWorld.)
  const sample = () => opNamed('create-customer');

  it('every kind of fault at every call of one operation, healed or persistent', async () => {
    const all = faultCases([sample()], FAULT_KINDS);
    const failures = await runCases(all, { ...FAST, concurrency: CONCURRENCY });
    expect(failures, `${failures.length} of ${all.length} cases failed`).toEqual([]);
    expect(new Set(all.map((c) => c.kind))).toEqual(new Set(FAULT_KINDS));
  }, 60_000);

  it('with the production back-off, one kind per class retries as without it', async () => {
    // The no-wait clients stand for the production ones only if they retry alike: the same cases
    // (same attempts, same answers, same table) with the SDK's own back-off.
    const all = faultCases([sample()], CLASS_REPRESENTATIVES);
    const failures = await runCases(all, { ...FAST, retryDelay: 'production', concurrency: all.length });
    expect(failures, `${failures.length} of ${all.length} cases failed`).toEqual([]);
  }, 60_000);

  it('a transaction conflicting twice in a row is sent a third time, then succeeds', async () => {
    const op = opNamed('create-subscription');
    const fault: Fault = { kind: 'transaction-conflict', call: 3, times: 2 };
    const { reply, injector } = await send(op, fault, FAST);
    expect(reply.status).toBe(201);
    expect(injector.attemptsByCall().slice(2)).toEqual([
      ['TransactWriteItemsCommand', 1],
      ['TransactWriteItemsCommand', 1],
      ['TransactWriteItemsCommand', 1],
    ]);
  });

  it('an unexpected DynamoDB error is the bare 500: no message, no name, no stack', async () => {
    const prepared = await opNamed('delete-webhook-endpoint').prepare();
    const api = faultyApi(world, undefined, {
      ...FAST,
      configure: (doc) =>
        doc.middlewareStack.add(
          () => async () => {
            throw Object.assign(new Error('One or more parameter values were invalid: secret detail'), {
              name: 'ValidationException',
              $metadata: { httpStatusCode: 400 },
            });
          },
          { step: 'finalizeRequest', name: 'validationFault', priority: 'low' },
        ),
    });
    try {
      const reply = await api.call(prepared.method, prepared.url, { token: prepared.token });
      expect(reply.status).toBe(500);
      expect(reply.body).toEqual({ error: 'InternalServerError', detail: 'Internal Server Error' });
      expect(reply.raw).not.toMatch(/secret detail|ValidationException/);
      // Not retried: an error the SDK does not know as transient is sent once.
      expect(api.injector.attemptsByCall()).toEqual([['GetItemCommand', 1]]);
    } finally {
      api.destroy();
    }
  });
});

describe('a DynamoDB that accepts connections and never answers', () => {
  let server: Server;
  const sockets = new Set<Socket>();
  let endpoint: string;
  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    endpoint = `http://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    vi.useRealTimers();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers 503 inside the 10 s function timeout, after the retries', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    // The production client (its timeouts, its back-off) on a fake clock: the time the request
    // takes is the clock's, moved on while the request is pending, never waited for.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const api = faultyApi(world, undefined, { endpoint });
    const started = Date.now();
    try {
      let reply: Awaited<ReturnType<typeof api.call>> | undefined;
      const pending = api
        .call('GET', '/v1/customer-portal/wallets/', { token: world.demo.customer_session_token })
        .then((answer) => {
          reply = answer;
        });
      // Clock steps far below the timeouts, each after the real I/O of the step before had its turn.
      while (reply === undefined && Date.now() - started < 2 * FUNCTION_TIMEOUT_MS) {
        await vi.advanceTimersByTimeAsync(10);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await pending;
      const elapsed = Date.now() - started;
      expectServiceUnavailable(opNamed('list-wallets'), reply as NonNullable<typeof reply>);
      expect(api.injector.attemptsByCall()).toEqual([['GetItemCommand', MAX_ATTEMPTS]]);
      // Each attempt ended on the production client's request timeout.
      expect(api.injector.log.map((attempt) => attempt.failed)).toEqual(
        Array.from({ length: MAX_ATTEMPTS }, () => 'TimeoutError ETIMEDOUT'),
      );
      expect(elapsed).toBeLessThan(FUNCTION_TIMEOUT_MS);
    } finally {
      vi.useRealTimers();
      api.destroy();
      errors.mockRestore();
    }
  }, 60_000);
});
