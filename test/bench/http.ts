/**
 * 5. Local HTTP stack throughput: autocannon over loopback against `startLocalStack` (run in its
 * own process, as `npm start` runs it), a mix of the four operations; every status that is not
 * the expected one counts as an error. A short run against a route the local router answers by
 * itself (404, no handler, no DynamoDB) gives the ceiling of the HTTP layer, for the ratio.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import autocannon, { type Request, type Result } from 'autocannon';
import type { DemoData } from '#scripts/local/seed.ts';
import { ROOT } from './bundle.ts';
import { UNKNOWN_ID } from './fixture.ts';
import { fmt, type SectionResult, verdict } from './report.ts';

interface Server {
  child: ChildProcess;
  demo: DemoData;
}

async function startServer(): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/http-server.ts'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`local stack exited early (${code})`)));
  });
  lines.close();
  child.stdout?.resume();
  return { child, demo: (JSON.parse(first) as { demo: DemoData }).demo };
}

async function stopServer(server: Server): Promise<void> {
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()));
  server.child.stdin?.end();
  const timer = setTimeout(() => server.child.kill('SIGTERM'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** CPU time (ms) a process has used so far, from /proc (Linux; undefined elsewhere). Ticks are 1/100 s. */
function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return undefined;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Direct children of a process (the local stack's DynamoDB Local JVM). */
function childrenOf(pid: number | undefined): number[] {
  if (pid === undefined || !existsSync('/proc')) return [];
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(pid);
      } catch {
        return false;
      }
    })
    .map(Number);
}

interface Kind {
  label: string;
  expected: number;
  request: Request;
}

function mix(demo: DemoData): Kind[] {
  const json = { 'content-type': 'application/json' };
  const pat = { authorization: `Bearer ${demo.personal_access_token}` };
  return [
    {
      label: 'List Wallets',
      expected: 200,
      request: {
        method: 'GET',
        path: '/v1/customer-portal/wallets/?limit=10&sorting=-balance',
        headers: { authorization: `Bearer ${demo.customer_session_token}` },
      },
    },
    {
      label: 'Create Subscription',
      expected: 201,
      request: {
        method: 'POST',
        path: '/v1/subscriptions/',
        headers: { ...pat, ...json },
        body: JSON.stringify({ product_id: demo.free_product_id, customer_id: demo.customer_id }),
      },
    },
    {
      label: 'Create Client',
      expected: 201,
      request: {
        method: 'POST',
        path: '/v1/oauth2/register',
        headers: { ...pat, ...json },
        body: JSON.stringify({ client_name: 'Bench', redirect_uris: ['https://app.example.com/callback'] }),
      },
    },
    {
      label: 'Delete Webhook Endpoint (unknown id → 404)',
      expected: 404,
      request: { method: 'DELETE', path: `/v1/webhooks/endpoints/${UNKNOWN_ID}`, headers: pat },
    },
  ];
}

export async function httpThroughput(options: {
  seconds: number;
  connections: number;
}): Promise<SectionResult> {
  const server = await startServer();
  try {
    const url = server.demo.base_url;
    const kinds = mix(server.demo);
    const counts = kinds.map(() => ({ expected: 0, unexpected: new Map<number, number>() }));
    const requests = kinds.map((kind, i) => ({
      ...kind.request,
      onResponse: (status: number) => {
        const count = counts[i] as (typeof counts)[number];
        if (status === kind.expected) count.expected++;
        else count.unexpected.set(status, (count.unexpected.get(status) ?? 0) + 1);
      },
    }));
    // Warm-up: every handler imported and its first (cold) requests done before measuring.
    await autocannon({ url, connections: 2, duration: 2, requests: kinds.map((k) => k.request) });
    const ceilingSeconds = Math.max(2, Math.round(options.seconds / 5));
    const ceiling: Result = await autocannon({
      url: `${url}/not-a-route`,
      connections: options.connections,
      duration: ceilingSeconds,
    });
    const apiPid = server.child.pid;
    const dbPid = childrenOf(apiPid)[0];
    const before = { api: cpuMs(apiPid), db: cpuMs(dbPid), self: process.cpuUsage() };
    const mixed: Result = await autocannon({
      url,
      connections: options.connections,
      duration: options.seconds,
      timeout: 10,
      requests,
    });
    const selfCpu = process.cpuUsage(before.self);
    const after = { api: cpuMs(apiPid), db: cpuMs(dbPid) };
    const unexpected = counts.reduce(
      (sum, c) => sum + [...c.unexpected.values()].reduce((a, b) => a + b, 0),
      0,
    );
    const errors = unexpected + mixed.errors + mixed.timeouts;
    const total = counts.reduce((sum, c) => sum + c.expected, 0) + unexpected;
    const perRequest = (from: number | undefined, to: number | undefined) =>
      from === undefined || to === undefined ? 'n/a' : `${fmt((to - from) / total, 2)} ms`;
    const rows = kinds.map((kind, i) => {
      const count = counts[i] as (typeof counts)[number];
      const other = [...count.unexpected.entries()].map(([status, n]) => `${status}×${n}`).join(' ') || '0';
      return [kind.label, kind.expected, count.expected, other];
    });
    return {
      id: 'http',
      title: '5. Local HTTP stack throughput',
      method: [
        `autocannon ${options.connections} connections × ${options.seconds} s over loopback against startLocalStack in its own process`,
        '(the real handlers behind the local API Gateway adapter, DynamoDB Local on the same 2 shared cores as',
        'the load generator). Each connection cycles List Wallets → Create Subscription → Create Client → Delete',
        `of an unknown id. Ceiling: ${ceilingSeconds} s against a path the router answers itself (404, no handler, no DynamoDB).`,
      ],
      tables: [
        {
          title: 'Mixed operations',
          note: 'target: zero errors (any status other than the expected one, socket errors, timeouts)',
          columns: [
            'requests/s (mean)',
            'latency p50 ms',
            'p99 ms',
            'max ms',
            'requests',
            'errors',
            'verdict',
            'vs HTTP ceiling',
          ],
          rows: [
            [
              fmt(mixed.requests.average, 0),
              fmt(mixed.latency.p50, 0),
              fmt(mixed.latency.p99, 0),
              fmt(mixed.latency.max, 0),
              total,
              errors,
              verdict(errors === 0),
              `${fmt(mixed.requests.average / ceiling.requests.average, 3)}× of ${fmt(ceiling.requests.average, 0)} req/s (p99 ${fmt(ceiling.latency.p99, 0)} ms)`,
            ],
          ],
        },
        {
          title: 'Statuses per request kind',
          columns: ['request', 'expected status', 'expected answers', 'other statuses'],
          rows,
        },
      ],
      notes: [
        `CPU per request during the mixed run: API process ${perRequest(before.api, after.api)}, DynamoDB Local ${perRequest(before.db, after.db)}, load generator ${fmt((selfCpu.user + selfCpu.system) / 1000 / total, 2)} ms, on two shared cores. In the API process our handler code is ~0.1 ms of it (section 4); the rest is the AWS SDK's per-call work (~1.4 ms per DynamoDB call here, section 4) and the local HTTP adapter.`,
      ],
    };
  } finally {
    await stopServer(server);
  }
}
