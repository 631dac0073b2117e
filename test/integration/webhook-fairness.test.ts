/**
 * Fairness on the local pipeline, in real time (`npm run test:fairness`, a long suite): one tenant
 * whose receiver accepts connections and never answers cannot hold back another tenant's deliveries
 * (fair queue by organization, a circuit per endpoint, the deliverer's 5 s deadline, as `npm start`
 * runs them). The fast tier keeps the fair queue's scenarios on an injected clock
 * (test/support/queue-scenarios.ts) and the circuit's (webhook-isolation.test.ts).
 */

import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CONCURRENT_BATCHES } from '#scripts/local/pipeline.ts';
import { LOCAL_VISIBILITY_SECONDS } from '#scripts/local/stack.ts';
import { DEFAULT_TIMEOUT_MS } from '#shared/webhooks/send.ts';
import { loopbackEndpoint, startTestPipeline, type TestPipeline } from '../support/pipeline.ts';
// On a DynamoDB Local of its own: it reads its tables' streams (test/support/private-engine.ts).
import { usePrivateEngine } from '../support/private-engine.ts';
import { receiversClosedAfterEach } from '../support/receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type World } from '../support/world.ts';

usePrivateEngine();

const receiver = receiversClosedAfterEach();

/** A receiver that accepts connections and never answers (nor closes them). */
async function startTarpit(): Promise<{ url: string; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const createCustomer = async (world: World, token: string, tag: string): Promise<string> => {
  const reply = await world.call('POST', '/v1/customers/', {
    token,
    body: { email: `${tag}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com` },
  });
  expect(reply.status).toBe(201);
  return (reply.body as { id: string }).id;
};

const customerOf = (body: string) => (JSON.parse(body) as { data: { id: string } }).data.id;

describe('fairness: a tenant whose endpoint never answers', () => {
  let world: World;
  let pipeline: TestPipeline;
  beforeAll(async () => {
    world = await createWorld('webhook-isolation');
    // As `npm start` runs it: its batches at once and visibility timeout, the deliverer's own deadline
    // and circuits (none injected).
    pipeline = await startTestPipeline(world, {
      deliverer: { timeoutMs: DEFAULT_TIMEOUT_MS },
      concurrentBatches: LOCAL_CONCURRENT_BATCHES,
      visibilityTimeoutSeconds: LOCAL_VISIBILITY_SECONDS,
    });
  });
  afterAll(async () => {
    await pipeline?.stop();
    await world?.drop();
  });

  it("takes 30 events to it and leaves another tenant's deliveries a p99 under 10 s", async () => {
    const tarpit = await startTarpit();
    try {
      const tenantB = world.demo.other_organization;
      await loopbackEndpoint(world, tarpit.url, ['customer.created']);
      const b = await receiver();
      await loopbackEndpoint(world, b.url, ['customer.created'], { organizationId: tenantB.organization_id });

      // Tenant A: 30 events for its tarpit, five requests at a time.
      for (let i = 0; i < 30; i += 5) {
        await Promise.all(
          [0, 1, 2, 3, 4].map(() => createCustomer(world, world.demo.personal_access_token, 'tarpit')),
        );
      }
      // Tenant B, right behind them, then again once the tarpit is being tried again (a retry, or the
      // probe of its circuit): every send's time, by customer.
      const sentAt = new Map<string, number>();
      const sendB = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const at = Date.now();
          sentAt.set(await createCustomer(world, tenantB.personal_access_token, 'tenant-b'), at);
        }
      };
      const arrived = () => new Set(b.deliveries.map((d) => customerOf(d.body)));
      const allArrived = () => [...sentAt.keys()].every((id) => arrived().has(id));
      await sendB(15);
      await waitFor(allArrived, 120_000, "tenant B's first 15 deliveries");
      const triedBefore = tarpit.connections();
      await waitFor(() => tarpit.connections() > triedBefore, 120_000, 'the tarpit tried again');
      await sendB(10);
      await waitFor(allArrived, 120_000, "tenant B's 25 deliveries");

      const latencies = [...sentAt.entries()]
        .map(([id, at]) => {
          const first = b.deliveries.find((d) => customerOf(d.body) === id);
          return (first?.at ?? Number.POSITIVE_INFINITY) - at;
        })
        .sort((x, y) => x - y);
      const p = (q: number) => latencies[Math.ceil(q * latencies.length) - 1] ?? Number.NaN;
      console.log(
        `[isolation] tenant B: ${latencies.length} deliveries, send → receipt p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${p(1)} ms; tenant A's tarpit: ${tarpit.connections()} connections for 30 events`,
      );
      expect(latencies).toHaveLength(25);
      expect(p(0.99)).toBeLessThan(10_000);
    } finally {
      await tarpit.close();
    }
  }, 400_000);
});
