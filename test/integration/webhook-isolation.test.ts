/**
 * Delivery isolation on the local pipeline (the queue and deliverer code `npm start` runs): an
 * endpoint's open circuit keeps its messages from the network until a probe finds it answering again
 * (issue 26, point 2). That one tenant's dead receiver cannot hold back another tenant's deliveries,
 * in real time with the 5 s deadline, is `npm run test:fairness` (webhook-fairness.test.ts); the fair
 * queue by organization it rests on is in the queue's scenarios (test/support/queue-scenarios.ts).
 */

import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/data/table.ts';
import { CIRCUIT_THRESHOLD, CircuitBreaker } from '#shared/webhooks/circuit.ts';
import { webhookEventId } from '#shared/webhooks/events.ts';
import { CIRCUIT_OPEN } from '#shared/webhooks/send.ts';
import { outboxOf } from '../support/outbox.ts';
import { loopbackEndpoint, startTestPipeline, type TestPipeline } from '../support/pipeline.ts';
// On a DynamoDB Local of its own: it reads its tables' streams (test/support/private-engine.ts).
import { usePrivateEngine } from '../support/private-engine.ts';
import { receiversClosedAfterEach } from '../support/receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type World } from '../support/world.ts';

usePrivateEngine();

const receiver = receiversClosedAfterEach();

const createCustomer = async (world: World, token: string, tag: string): Promise<string> => {
  const reply = await world.call('POST', '/v1/customers/', {
    token,
    body: { email: `${tag}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com` },
  });
  expect(reply.status).toBe(201);
  return (reply.body as { id: string }).id;
};

describe("an endpoint's circuit", () => {
  let world: World;
  let pipeline: TestPipeline | undefined;
  /** Open for an hour of the queue's time, so that nothing but the test ends it. */
  const OPEN_MS = 3_600_000;
  const circuit = new CircuitBreaker({
    openMs: OPEN_MS,
    maxOpenMs: OPEN_MS,
    now: () => Date.now() + (pipeline?.skipped() ?? 0),
  });
  beforeAll(async () => {
    world = await createWorld('webhook-circuit');
    pipeline = await startTestPipeline(world, { skipIdleTime: true, deliverer: { circuit } });
  });
  afterAll(async () => {
    await pipeline?.stop();
    await world?.drop();
  });

  const getItem = async (key: { PK: string; SK: string }) =>
    (
      await world.table.doc.send(
        new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
      )
    ).Item;
  const attemptsOf = async (id: string) =>
    (
      await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :a)',
          ExpressionAttributeValues: { ':pk': keys.webhookEvent(id).PK, ':a': 'ATTEMPT#' },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];

  it(`opens after ${CIRCUIT_THRESHOLD} failures in a row: no request while open, attempts taken as "${CIRCUIT_OPEN}"; a probe that is answered closes it`, async () => {
    let down = true;
    const r = await receiver(() => (down ? { status: 503, body: 'down' } : 204));
    const { endpoint } = await loopbackEndpoint(world, r.url, ['customer.created']);
    /** Sends one event and waits for its first attempt: its webhook event's id. */
    const oneEvent = async () => {
      const customerId = await createCustomer(world, world.demo.personal_access_token, 'circuit');
      const [event] = await outboxOf(world.table, 'customer', customerId);
      const id = webhookEventId(String(event?.id), endpoint.id);
      await waitFor(
        async () => ((await getItem(keys.webhookEvent(id)))?.attempts ?? 0) >= 1,
        30_000,
        'its first attempt',
      );
      return id;
    };

    const failing: string[] = [];
    for (let i = 0; i < CIRCUIT_THRESHOLD; i++) failing.push(await oneEvent());
    expect(circuit.state(endpoint.id)).toBe('open');
    const requestsWhenOpened = r.deliveries.length;
    expect(requestsWhenOpened).toBeGreaterThanOrEqual(CIRCUIT_THRESHOLD);

    const heldBack = [await oneEvent(), await oneEvent(), await oneEvent()];
    // Nothing went out while it was open: not these events, nor the earlier events' retries.
    expect(r.deliveries.length).toBe(requestsWhenOpened);
    for (const id of heldBack) {
      const [first] = await attemptsOf(id);
      expect(first).toMatchObject({ attempt: 1, succeeded: false, http_code: null, response: CIRCUIT_OPEN });
      expect((await getItem(keys.webhookEvent(id)))?.status).toBe('pending');
    }

    // The receiver is back; the open period ends (the queue's and the circuit's clock, an hour on):
    // the first message probes, is answered, and every event is delivered.
    down = false;
    pipeline?.advance(OPEN_MS);
    const all = [...failing, ...heldBack];
    // The events' retries wait where the ladder left them while the circuit was open (up to hours of
    // the queue's time, the more the slower the machine ran the steps above): the clock is moved on
    // while the pipeline is idle, by steps no longer than the ladder's first rungs, until all are
    // delivered. (Skipping idle time alone, 20× real time, needed 90 s for a 30 min rung on a
    // loaded CI machine, and the wait timed out.)
    await waitFor(
      async () => {
        const statuses = await Promise.all(
          all.map(async (id) => (await getItem(keys.webhookEvent(id)))?.status),
        );
        if (statuses.every((status) => status === 'succeeded')) return true;
        if (pipeline?.idle()) pipeline.advance(60_000);
        return false;
      },
      90_000,
      'every event delivered after the probe',
    );
    expect(circuit.state(endpoint.id)).toBe('closed');
    const delivered = new Set(
      r.deliveries.filter((_, n) => n >= requestsWhenOpened).map((d) => d.headers['webhook-id']),
    );
    for (const id of all) expect(delivered.has(id)).toBe(true);
  }, 300_000);
});
