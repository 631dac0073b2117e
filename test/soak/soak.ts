/**
 * Soak: a bounded mixed load over loopback against the local stack, run in its
 * own process (test/soak/server.ts, with --expose-gc), for SOAK_SECONDS (120 by
 * default; `npm run soak`). The load runs in rounds; between rounds, with no
 * request in flight, the handler process forces a full GC and reports its heap.
 *
 * Passes when every answer had its expected status (no error, no timeout, no
 * 5xx) and the heap after GC is flat: the last sample within SOAK_MAX_RATIO
 * (1.3) of the first one taken after warm-up. Prints the figures either way;
 * exits 1 on failure.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { DemoData } from '#scripts/local/seed.ts';

interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest;
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
}
interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
// autocannon ships no types; these are the parts used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string;
  connections: number;
  duration: number;
  timeout: number;
  requests: AutocannonRequest[];
}) => Promise<AutocannonResult>;

const SECONDS = Number(process.env.SOAK_SECONDS ?? 120);
const ROUND_SECONDS = Math.min(10, Math.max(2, Math.floor(SECONDS / 8)));
const WARMUP_SECONDS = Math.min(5, ROUND_SECONDS);
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 8);
const MAX_RATIO = Number(process.env.SOAK_MAX_RATIO ?? 1.3);

interface Ready {
  type: 'ready';
  demo: DemoData & { table_name: string };
  endpoints: string[];
}

function startServer(): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`soak server exited early (${code})`)));
    child.on('message', (message: { type: string }) => {
      if (message.type === 'ready') resolve({ child, ready: message as Ready });
    });
  });
}

function heapUsed(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (message: { type: string; heapUsed?: number }) => {
      if (message.type !== 'heap') return;
      child.off('message', onMessage);
      resolve(message.heapUsed as number);
    };
    child.on('message', onMessage);
    child.send({ type: 'heap' });
  });
}

interface Operation {
  name: string;
  weight: number;
  build(): { method: string; path: string; headers: Record<string, string>; body?: string; expect: number };
}

function mix(demo: DemoData, endpoints: string[]): Operation[] {
  const pat = { authorization: `Bearer ${demo.personal_access_token}`, 'content-type': 'application/json' };
  const sessions = [
    demo.customer_session_token,
    demo.second_customer_session_token,
    demo.large_customer_session_token,
  ];
  const customers = [demo.customer_id, demo.second_customer_id, demo.large_customer_id];
  const sorts = ['', 'sorting=balance', 'sorting=-balance&sorting=created_at', 'sorting=created_at'];
  const pick = <T>(values: T[]): T => values[Math.floor(Math.random() * values.length)] as T;
  const pool = [...endpoints];
  return [
    {
      name: 'list wallets',
      weight: 8,
      build: () => ({
        method: 'GET',
        path: `/v1/customer-portal/wallets/?page=${1 + Math.floor(Math.random() * 3)}&limit=${pick([5, 10, 50, 100])}&${pick(sorts)}`,
        headers: { authorization: `Bearer ${pick(sessions)}` },
        expect: 200,
      }),
    },
    {
      name: 'create subscription',
      weight: 3,
      build: () => ({
        method: 'POST',
        path: '/v1/subscriptions/',
        headers: pat,
        body: JSON.stringify({
          product_id: demo.free_product_id,
          customer_id: pick(customers),
          metadata: { soak: randomUUID(), n: Math.random() },
        }),
        expect: 201,
      }),
    },
    {
      name: 'create client',
      weight: 2,
      build: () => ({
        method: 'POST',
        path: '/v1/oauth2/register',
        headers: pat,
        body: JSON.stringify({
          redirect_uris: ['https://app.example/cb'],
          client_name: `soak ${randomUUID()}`,
        }),
        expect: 201,
      }),
    },
    {
      name: 'delete webhook endpoint',
      weight: 1,
      build: () => {
        const id = pool.pop();
        return {
          method: 'DELETE',
          path: `/v1/webhooks/endpoints/${id ?? randomUUID()}`,
          headers: { authorization: pat.authorization },
          expect: id ? 204 : 404,
        };
      },
    },
    {
      name: 'refused: paid product (422)',
      weight: 1,
      build: () => ({
        method: 'POST',
        path: '/v1/subscriptions',
        headers: pat,
        body: JSON.stringify({ product_id: demo.paid_product_id, customer_id: demo.customer_id }),
        expect: 422,
      }),
    },
    {
      name: 'refused: unknown token (401)',
      weight: 1,
      build: () => ({
        method: 'GET',
        path: '/v1/customer-portal/wallets',
        headers: { authorization: `Bearer polar_cst_${randomUUID().replace(/-/g, '')}` },
        expect: 401,
      }),
    },
  ];
}

interface Tally {
  sent: number;
  unexpected: Map<string, number>;
  byOperation: Map<string, number>;
}

async function round(
  base: string,
  operations: Operation[],
  seconds: number,
  tally: Tally,
): Promise<AutocannonResult> {
  const weighted = operations.flatMap((op) => Array<Operation>(op.weight).fill(op));
  return autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        setupRequest: (request, context) => {
          const op = weighted[Math.floor(Math.random() * weighted.length)] as Operation;
          const { expect, ...built } = op.build();
          context.expect = expect;
          context.op = op.name;
          tally.sent++;
          tally.byOperation.set(op.name, (tally.byOperation.get(op.name) ?? 0) + 1);
          return { ...request, ...built, ...(built.body === undefined ? { body: undefined } : {}) };
        },
        onResponse: (status, body, context) => {
          if (status !== context.expect) {
            const key = `${String(context.op)}: ${status} (expected ${String(context.expect)}) ${body.slice(0, 120)}`;
            tally.unexpected.set(key, (tally.unexpected.get(key) ?? 0) + 1);
          }
        },
      },
    ],
  });
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MB`;

async function main(): Promise<boolean> {
  const { child, ready } = await startServer();
  try {
    const base = ready.demo.base_url;
    const operations = mix(ready.demo, ready.endpoints);
    const tally: Tally = { sent: 0, unexpected: new Map(), byOperation: new Map() };
    let errors = 0;
    let timeouts = 0;
    let total = 0;
    const latencies: { p50: number; p99: number; max: number }[] = [];

    // Warm-up: JIT, connection pools, first-use allocations; the baseline is taken after it.
    const warm = await round(base, operations, WARMUP_SECONDS, tally);
    errors += warm.errors;
    timeouts += warm.timeouts;
    const heaps = [await heapUsed(child)];
    const rounds = Math.max(1, Math.round(SECONDS / ROUND_SECONDS));
    for (let i = 0; i < rounds; i++) {
      const result = await round(base, operations, ROUND_SECONDS, tally);
      errors += result.errors;
      timeouts += result.timeouts;
      total += result.requests.total;
      latencies.push(result.latency);
      heaps.push(await heapUsed(child));
      process.stdout.write(
        `round ${i + 1}/${rounds}: ${result.requests.total} requests (${result.requests.average.toFixed(0)}/s), p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, heap after GC ${mb(heaps.at(-1) as number)}\n`,
      );
    }
    const first = heaps[0] as number;
    const last = heaps.at(-1) as number;
    const ratio = last / first;
    const unexpected = [...tally.unexpected.values()].reduce((a, b) => a + b, 0);
    process.stdout.write(
      [
        '',
        `soak: ${total} requests in ${rounds * ROUND_SECONDS} s over ${CONNECTIONS} connections (after ${WARMUP_SECONDS} s warm-up)`,
        `mix: ${[...tally.byOperation].map(([name, n]) => `${name} ${n}`).join(', ')}`,
        `errors ${errors}, timeouts ${timeouts}, unexpected statuses ${unexpected}`,
        ...[...tally.unexpected].slice(0, 10).map(([key, n]) => `  ${n} × ${key}`),
        `latency p99 per round (ms): ${latencies.map((l) => l.p99).join(', ')}`,
        `heap after forced GC: first ${mb(first)}, last ${mb(last)}, ratio ${ratio.toFixed(3)} (max ${MAX_RATIO}); samples ${heaps.map(mb).join(', ')}`,
        '',
      ].join('\n'),
    );
    return errors === 0 && timeouts === 0 && unexpected === 0 && total > 0 && ratio <= MAX_RATIO;
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ type: 'stop' });
    const timer = setTimeout(() => child.kill('SIGTERM'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

const ok = await main();
process.stdout.write(ok ? 'soak: PASS\n' : 'soak: FAIL\n');
process.exit(ok ? 0 : 1);
