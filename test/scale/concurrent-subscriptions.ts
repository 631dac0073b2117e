/**
 * `npx tsx test/scale/concurrent-subscriptions.ts [--n 500] [--same-customer] [--hold-ms 0] [--max-in-flight K] [--throughput]`
 *
 * A scale report, not a test: N concurrent Create Subscription on one product (the demo's free
 * product), each for its own fresh customer (a freemium launch: every signup through one free
 * plan), through the real handler against DynamoDB Local with DynamoDB's transaction conflicts
 * emulated (`conflicts.ts`). It prints the answers by status, the items the conflicts were on, and
 * what else failed. The target of issue 25 is N × 201 and no conflict for N ≥ 500 (the test that
 * holds it: `concurrent-subscriptions.test.ts`, `npm run test:scale`); before, every signup's
 * transaction checked the product and added to the lists' count shards, so overlapping signups
 * conflicted (docs/data-model.md, Scale model). `--hold-ms` keeps each transaction in flight that much
 * longer (DynamoDB Local answers in a millisecond or two; the service takes longer).
 * `--max-in-flight K` lets at most K DynamoDB calls reach DynamoDB Local at once, the others waiting
 * before the emulators (holding nothing): without it a flood of 500 requests queues inside DynamoDB
 * Local's one process past the SDK's 2 s request timeout, which DynamoDB itself would not do.
 * `--throughput` also applies the 1,000 WCU/s per partition key (`throughput.ts`, real clock).
 */
import { benchEnvironment } from '#test/bench/handlers.ts';
import { createLocalWorld, stopDynamoDbLocal } from '#test/bench/local-table.ts';
import { ConflictEmulator, limitInFlight } from './conflicts.ts';
import { PartitionThroughput, ThroughputEmulator } from './throughput.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const n = option('--n', 500);
const holdMs = option('--hold-ms', 0);
const sameCustomer = args.includes('--same-customer');

benchEnvironment();
const world = await createLocalWorld('conflicts');
const token = world.demo.personal_access_token;
const log = console.log;
const quiet = () => {
  console.log = () => {};
};
const loud = () => {
  console.log = log;
};

try {
  // The customers first, outside the emulation (their own transactions are not what is measured).
  quiet();
  const customers: string[] = [];
  if (sameCustomer) customers.push(...Array.from({ length: n }, () => world.demo.customer_id));
  else {
    const run = Date.now().toString(36);
    for (let i = 0; i < n; i += 10) {
      const made = await Promise.all(
        Array.from({ length: Math.min(10, n - i) }, async (_, j) => {
          const reply = await world.call('create-customer', 'POST', '/v1/customers/', {
            token,
            body: { email: `signup+${run}-${i + j}@example.com`, name: 'Signup' },
          });
          if (reply.status !== 201)
            throw new Error(`Create Customer answered ${reply.status}: ${reply.body}`);
          return JSON.parse(reply.body ?? '{}').id as string;
        }),
      );
      customers.push(...made);
    }
  }

  const maxInFlight = option('--max-in-flight', 0);
  if (maxInFlight > 0) limitInFlight(world.table.doc, maxInFlight);
  const emulator = new ConflictEmulator(
    holdMs > 0 ? () => new Promise((resolve) => setTimeout(resolve, holdMs)) : undefined,
  );
  emulator.install(world.table.doc);
  const throughput = args.includes('--throughput')
    ? new ThroughputEmulator(new PartitionThroughput(Date.now))
    : undefined;
  throughput?.install(world.table.doc);
  // What failed besides the emulated conflicts (timeouts of a loaded DynamoDB Local, throttles).
  const otherErrors = new Map<string, number>();
  world.table.doc.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const name = (error as Error).name ?? 'Error';
        otherErrors.set(name, (otherErrors.get(name) ?? 0) + 1);
        throw error;
      }
    },
    { step: 'initialize', name: 'otherErrors', priority: 'low' },
  );

  const started = performance.now();
  const replies = await Promise.all(
    customers.map((customer) =>
      world
        .call('create-subscription', 'POST', '/v1/subscriptions/', {
          token,
          body: { product_id: world.demo.free_product_id, customer_id: customer },
        })
        .catch((error: Error) => ({ status: -1, body: error.message, headers: {} })),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  loud();

  const byStatus = new Map<number, number>();
  for (const r of replies) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
  const onItem = new Map<string, number>();
  for (const conflict of emulator.conflicts) {
    for (const item of conflict.items) {
      const [, pk, sk] = item.split('\u0000');
      const shape = `${pk} / ${sk}`
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) =>
          id === world.demo.free_product_id
            ? '<free product>'
            : id === world.demo.organization_id
              ? '<org>'
              : id === world.demo.customer_id
                ? '<customer>'
                : '<id>',
        )
        .replace(/#COUNT#(.*)#\d+$/, '#COUNT#$1#<shard>');
      onItem.set(shape, (onItem.get(shape) ?? 0) + 1);
    }
  }
  console.log(
    `${n} concurrent Create Subscription on one product (${sameCustomer ? 'one customer' : 'one fresh customer each'}), DynamoDB transaction conflicts emulated${holdMs ? `, each transaction held ${holdMs} ms` : ''}${maxInFlight ? `, at most ${maxInFlight} calls at DynamoDB Local at once` : ''}${args.includes('--throughput') ? ', 1,000 WCU/s per partition' : ''}:`,
  );
  console.log(
    `  answers: ${[...byStatus.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([status, count]) => `${count} × ${status}`)
      .join(', ')} in ${seconds.toFixed(1)} s`,
  );
  console.log(
    `  transactions committed: ${emulator.committed}; refused for a conflict: ${emulator.conflicts.length} (run() retries each up to 3 times, then 503)`,
  );
  console.log('  conflicts by item (a refused transaction counts every item it found held):');
  for (const [shape, count] of [...onItem.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    console.log(`    ${String(count).padStart(6)}  ${shape}`);
  }
  if (throughput) {
    const hot = new Map<string, number>();
    for (const t of throughput.throttled) for (const p of t.partitions) hot.set(p, (hot.get(p) ?? 0) + 1);
    console.log(
      `  throttled at 1,000 WCU/s per partition: ${throughput.throttled.length} (${[...hot.entries()].map(([p, c]) => `${c} × ${p.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>')}`).join(', ') || 'none'})`,
    );
  }
  const others = [...otherErrors.entries()].filter(
    ([name]) => !/^Transaction(Canceled|Conflict)Exception$/.test(name),
  );
  console.log(
    `  other DynamoDB errors: ${others.length ? others.map(([k, v]) => `${v} × ${k}`).join(', ') : 'none'}`,
  );
  const target = byStatus.get(201) === n && emulator.conflicts.length === 0;
  console.log(`  issue 25's target (${n} × 201, no conflict): ${target ? 'met' : 'NOT met'}`);
} finally {
  loud();
  await world.drop();
  await stopDynamoDbLocal();
}
