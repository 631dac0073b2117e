/**
 * The webhook pipeline's costs (issue 12), against the run's DynamoDB Local:
 *
 * - What the outbox adds to a write: Create Customer's own transaction (`insertCustomer`: the
 *   customer, its guards, its list entries and count) with its `customer.created` item and without
 *   it, interleaved, the same number of times.
 * - Deliveries per second of the local pipeline as `npm start` runs it: the table's stream polled,
 *   the relay and deliverer handlers in process with the in-process queue, a receiver on loopback
 *   answering 204; from the first of a burst of customer writes to the last delivery received.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOrganization } from '#scripts/admin/commands.ts';
import { startLocalPipeline } from '#scripts/local/pipeline.ts';
import { insertCustomer } from '#shared/data/customers.ts';
import { outboxWrites } from '#shared/data/outbox.ts';
import type { CustomerRecord } from '#shared/data/records.ts';
import { newId } from '#shared/domain/ids.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import { presentCustomer } from '#shared/services/presenters.ts';
import { openWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import type { LocalWorld } from './local-table.ts';
import { fmt, median, percentile, type SectionResult } from './report.ts';

const REGION = 'us-east-1';

function newCustomer(organizationId: string): CustomerRecord {
  return {
    id: newId(),
    organization_id: organizationId,
    created_at: new Date().toISOString(),
    modified_at: null,
    metadata: {},
    external_id: null,
    email: `bench-${newId()}@example.com`,
    email_verified: false,
    type: 'individual',
    name: 'Bench',
    billing_name: null,
    billing_address: null,
    tax_id: null,
    locale: null,
    deleted_at: null,
    wallet_count: 0,
  };
}

/** Create Customer's transaction, with its event (as the service writes it) or without. */
async function writeCustomer(world: LocalWorld, organizationId: string, withEvent: boolean): Promise<number> {
  const customer = newCustomer(organizationId);
  const started = performance.now();
  const events = withEvent
    ? outboxWrites(
        world.table,
        { kind: 'customer', id: customer.id, organizationId },
        customer.created_at,
        [{ type: 'customer.created', data: presentCustomer(customer) }],
        newId,
      )
    : [];
  await insertCustomer(world.table, customer, events);
  return performance.now() - started;
}

async function receiver(): Promise<{ server: Server; url: string; received: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/hooks`, received: () => count };
}

export async function webhookPipeline(
  world: LocalWorld,
  options: { writes: number; deliveries: number },
): Promise<SectionResult> {
  // An organization of its own: the demo's endpoints (unreachable names) receive none of these events.
  const organization = await createOrganization(world.admin, { name: 'Bench webhooks' });
  for (let i = 0; i < 10; i++) {
    await writeCustomer(world, organization.id, i % 2 === 0);
  }
  const times = { with: [] as number[], without: [] as number[] };
  for (let i = 0; i < options.writes; i++) {
    const first = i % 2 === 0;
    times[first ? 'with' : 'without'].push(await writeCustomer(world, organization.id, first));
    times[first ? 'without' : 'with'].push(await writeCustomer(world, organization.id, !first));
  }

  const sink = await receiver();
  const deps = { ...world.admin, webhooks: { ...world.admin.webhooks, addresses: { allowLoopback: true } } };
  await openWebhookEndpoint(deps, organization.id, {
    url: sink.url,
    name: 'bench receiver',
    format: 'raw',
    events: ['customer.created'],
  });
  // Loaded here, after benchEnvironment(): handler modules wire their production dependencies on load.
  const { createHandler: createRelay } = await import('#functions/webhook-relay/handler.ts');
  const { createHandler: createDeliverer } = await import('#functions/webhook-deliverer/handler.ts');
  const queue = new LocalQueue({ visibilityTimeoutSeconds: 30, maxReceiveCount: 15 });
  const pipeline = await startLocalPipeline({
    dynamodbEndpoint: world.endpoint,
    tableName: world.table.name,
    region: REGION,
    queue,
    relay: createRelay({ ...deps, queue }),
    deliver: createDeliverer({ ...deps, queue, timeoutMs: 5_000 }),
    pollMs: 25,
  });
  let seconds = Number.NaN;
  // The relay's and deliverer's info lines (one per event and attempt) would bury the report.
  const level = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'warn';
  try {
    // Everything written so far (the seed's, the latency writes') is relayed first.
    await pipeline.settled(120_000);
    const before = sink.received();
    const started = performance.now();
    const writers = 4;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = w; i < options.deliveries; i += writers)
          await writeCustomer(world, organization.id, true);
      }),
    );
    while (sink.received() - before < options.deliveries) {
      if (performance.now() - started > 300_000)
        throw new Error('deliveries did not arrive within 5 minutes');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    seconds = (performance.now() - started) / 1000;
  } finally {
    await pipeline.stop();
    await new Promise((resolve) => sink.server.close(resolve));
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
  }

  const row = (label: string, values: number[]) => [
    label,
    values.length,
    fmt(median(values)),
    fmt(percentile(values, 90)),
  ];
  const added = median(times.with) - median(times.without);
  return {
    id: 'webhooks',
    title: 'Webhook pipeline: the outbox on the write path, deliveries per second',
    method: [
      `Create Customer's transaction (insertCustomer, DynamoDB Local) ${options.writes} times with its customer.created outbox item and ${options.writes} times without, interleaved.`,
      `Then ${options.deliveries} customer writes (4 concurrent writers) through the local pipeline (stream poll every 25 ms, relay, in-process queue, deliverer signing and POSTing to a loopback receiver answering 204): first write to last delivery.`,
    ],
    tables: [
      {
        title: 'A write with its outbox item vs the same write without',
        columns: ['write', 'n', 'median ms', 'p90 ms'],
        rows: [
          row('with customer.created', times.with),
          row('without', times.without),
          [
            'added by the outbox',
            '',
            fmt(added),
            fmt(percentile(times.with, 90) - percentile(times.without, 90)),
          ],
        ],
      },
      {
        title: 'Deliveries per second of the local pipeline',
        columns: ['deliveries', 'seconds', 'per second'],
        rows: [[options.deliveries, fmt(seconds), fmt(options.deliveries / seconds, 1)]],
      },
    ],
    notes: [
      'The outbox adds one Put to a transaction that already exists: no round trip, one more item written (a transaction writes each item twice: prepare and commit).',
      'The local figure bounds the in-process pipeline on a shared 2-core machine (DynamoDB Local, stream polling, one process); deployed, the deliverer scales with its SQS mapping (up to 20 concurrent executions of 10 messages).',
    ],
  };
}
