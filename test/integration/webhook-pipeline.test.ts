/**
 * The webhook pipeline end to end over DynamoDB Local: the API writes events in its transactions, the
 * table's stream carries them to the relay, the relay fans them out to the subscribed endpoints and
 * queues one message each, the deliverer signs and sends them to receivers on loopback. Every function
 * runs under its template policy (IAM proxy); the queue is the in-process one with SQS's semantics.
 */

import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { webhooks } from '@polar-sh/sdk/2026-10';
import { validateEvent as validateV0 } from 'polar-sdk-v0/webhooks';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { recordWebhookEvent } from '#shared/data/deliveries.ts';
import type { WebhookEndpointRecord } from '#shared/data/records.ts';
import { keys } from '#shared/data/table.ts';
import {
  getWebhookEndpoint,
  replaceWebhookEndpoint,
  softDeleteWebhookEndpoint,
} from '#shared/data/webhooks.ts';
import { newId } from '#shared/domain/ids.ts';
import { FAILED_EVENTS_DISABLE_THRESHOLD } from '#shared/webhooks/deliver.ts';
import { envelope, webhookEventId } from '#shared/webhooks/events.ts';
import { MAX_ATTEMPTS } from '#shared/webhooks/retry.ts';
import { outboxOf } from '../support/outbox.ts';
import { loopbackEndpoint, startTestPipeline, type TestPipeline } from '../support/pipeline.ts';
// On a DynamoDB Local of its own: it reads its table's stream (test/support/private-engine.ts).
import { usePrivateEngine } from '../support/private-engine.ts';
import { type Delivery, type Receiver, receiversClosedAfterEach } from '../support/receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type World } from '../support/world.ts';

usePrivateEngine();

let world: World;
let pipeline: TestPipeline;
/** While set, the deliverer is not called: messages are reported failed and come back later. */
let holding = false;
/** Webhook event ids of the messages held back, until one is handed to the deliverer. */
const held = new Set<string>();
const relayBatches: Parameters<TestPipeline['relay']>[0][] = [];
const aggregatorBatches: Parameters<NonNullable<TestPipeline['aggregate']>>[0][] = [];
beforeAll(async () => {
  world = await createWorld('webhook-pipeline');
  // Its stream starts with the pipeline: the demo seed's writes are not relayed.
  pipeline = await startTestPipeline(world, {
    // Each stream batch the relay and the aggregator are handed, kept for the replay test.
    wrapRelay: (relay) => async (event) => {
      relayBatches.push(event);
      return relay(event);
    },
    aggregate: (aggregate) => async (event) => {
      aggregatorBatches.push(event);
      return aggregate(event);
    },
    wrapDeliver: (deliver) => async (event) => {
      const ids = event.Records.map((r) => JSON.parse(r.body).webhook_event_id as string);
      if (holding) {
        for (const id of ids) held.add(id);
        return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
      }
      for (const id of ids) held.delete(id);
      return deliver(event);
    },
  });
});
afterAll(async () => {
  await pipeline?.stop();
  await world?.drop();
});
const receiver = receiversClosedAfterEach();

const token = () => world.demo.personal_access_token;
async function subscribe(customerId = world.demo.customer_id) {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: token(),
    body: { product_id: world.demo.free_product_id, customer_id: customerId },
  });
  expect(reply.status).toBe(201);
  return reply.body as { id: string; created_at: string };
}

/** The JSON lines the functions write from now until `restore()`. */
function captureLines(): { lines: Record<string, unknown>[]; restore(): void } {
  const lines: Record<string, unknown>[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((text: unknown) => {
    try {
      lines.push(JSON.parse(String(text)));
    } catch {
      // not a JSON line
    }
  });
  return { lines, restore: () => spy.mockRestore() };
}

const headersOf = (d: Delivery) =>
  Object.fromEntries(Object.entries(d.headers).map(([k, v]) => [k, String(v)]));
const typeOf = (d: Delivery) => JSON.parse(d.body).type as string;
const ofSubscription = (id: string) => (d: Delivery) => JSON.parse(d.body).data.id === id;

const getItem = async (key: { PK: string; SK: string }) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
    )
  ).Item;

describe('a new subscription reaches the subscribed endpoints', () => {
  it('each delivery verifies with @polar-sh/sdk 1.x and 0.49 validateEvent and with standardwebhooks', async () => {
    const r = await receiver();
    const { endpoint, secret } = await loopbackEndpoint(world, r.url, [
      'subscription.created',
      'subscription.active',
      'subscription.updated',
    ]);
    const subscription = await subscribe();
    await waitFor(
      () => r.deliveries.filter(ofSubscription(subscription.id)).length === 3,
      15_000,
      '3 deliveries',
    );
    const mine = r.deliveries.filter(ofSubscription(subscription.id));
    expect(mine.map(typeOf).sort()).toEqual([
      'subscription.active',
      'subscription.created',
      'subscription.updated',
    ]);
    const events = await outboxOf(world.table, 'subscription', subscription.id);
    for (const delivery of mine) {
      const headers = headersOf(delivery);
      const event = events.find((e) => e.type === typeOf(delivery));
      // The exact stored envelope; the webhook-id is the (event, endpoint) pair's.
      expect(delivery.body).toBe(event?.payload);
      expect(headers['webhook-id']).toBe(webhookEventId(event?.id as string, endpoint.id));
      expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
      expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
      const v1 = await webhooks.validateEvent(delivery.body, headers, secret);
      expect((v1 as { type: string }).type).toBe(typeOf(delivery));
      const v0 = validateV0(delivery.body, headers, secret);
      expect(v0.type).toBe(typeOf(delivery));
      expect(new Webhook(secret).verify(delivery.body, headers)).toMatchObject({ type: typeOf(delivery) });
    }
  });

  it('only enabled, live endpoints of the organization subscribed to the type receive it', async () => {
    const [subscribed, other, disabled, deleted, tenant] = await Promise.all(
      [1, 2, 3, 4, 5].map(() => receiver()),
    );
    await loopbackEndpoint(world, (subscribed as Receiver).url, ['subscription.created']);
    await loopbackEndpoint(world, (other as Receiver).url, ['customer.created']);
    await loopbackEndpoint(world, (disabled as Receiver).url, ['subscription.created'], { enabled: false });
    await loopbackEndpoint(world, (deleted as Receiver).url, ['subscription.created'], { deleted: true });
    await loopbackEndpoint(world, (tenant as Receiver).url, ['subscription.created'], {
      organizationId: world.demo.other_organization.organization_id,
    });
    const subscription = await subscribe();
    await waitFor(() => (subscribed as Receiver).deliveries.length === 1, 15_000, 'the subscribed endpoint');
    await pipeline.settled();
    expect(typeOf((subscribed as Receiver).deliveries[0] as Delivery)).toBe('subscription.created');
    expect(ofSubscription(subscription.id)((subscribed as Receiver).deliveries[0] as Delivery)).toBe(true);
    for (const r of [other, disabled, deleted, tenant]) expect((r as Receiver).deliveries).toEqual([]);
  });
});

describe('retries', () => {
  it('a first attempt answered 500 is retried within seconds with the same webhook-id; both attempts recorded', async () => {
    const r = await receiver((n) => (n === 0 ? { status: 500, body: 'try again' } : 200));
    const { endpoint } = await loopbackEndpoint(world, r.url, ['customer.created']);
    const created = await world.call('POST', '/v1/customers/', {
      token: token(),
      body: { email: `retry-${Date.now()}@example.com` },
    });
    expect(created.status).toBe(201);
    await waitFor(() => r.deliveries.length === 2, 20_000, 'the retry');
    const [first, second] = r.deliveries as [Delivery, Delivery];
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.body).toBe(first.body);
    // Within seconds: the deliverer set the ladder's first rung (3 s with the test's jitter of 0) as
    // the message's wait, and the retry came no sooner. No upper bound on the wall clock: a loaded
    // machine may deliver the retry late, which is not this behaviour failing.
    expect(second.at - first.at).toBeGreaterThan(2_000);
    await pipeline.settled();
    const id = String(first.headers['webhook-id']);
    expect(pipeline.retryDelays(id)).toEqual([3]);
    const event = await getItem(keys.webhookEvent(id));
    expect(event).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      last_http_code: 200,
      endpoint_id: endpoint.id,
    });
    const attempts = (
      await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :a)',
          ExpressionAttributeValues: { ':pk': `WHEVENT#${id}`, ':a': 'ATTEMPT#' },
        }),
      )
    ).Items;
    expect(attempts?.map((a) => [a.attempt, a.http_code, a.succeeded, a.response])).toEqual([
      [1, 500, false, 'try again'],
      [2, 200, true, ''],
    ]);
    expect(MAX_ATTEMPTS).toBeGreaterThan(2);
  });
});

describe('deleted and disabled endpoints stop at once', () => {
  it('after the endpoint is deleted, a new subscription delivers nothing to it', async () => {
    const r = await receiver();
    const { endpoint } = await loopbackEndpoint(world, r.url, ['subscription.created']);
    await subscribe();
    await waitFor(() => r.deliveries.length === 1, 15_000, 'the first delivery');
    const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: token() });
    expect(deleted.status).toBe(204);
    await subscribe();
    await pipeline.drained({ endpointId: endpoint.id });
    expect(r.deliveries).toHaveLength(1);
  });

  it('an event already queued is not sent after its endpoint is deleted: it is skipped', async () => {
    const r = await receiver();
    const { endpoint } = await loopbackEndpoint(world, r.url, ['customer.created']);
    holding = true;
    try {
      const customer = await world.call('POST', '/v1/customers/', {
        token: token(),
        body: { email: `queued-${Date.now()}@example.com` },
      });
      const [event] = await outboxOf(world.table, 'customer', customer.body.id);
      const id = webhookEventId(event?.id as string, endpoint.id);
      // Relayed and queued, held back from the deliverer.
      await waitFor(() => held.has(id), 10_000, 'the queued message');
      expect(await getItem(keys.webhookEvent(id))).toMatchObject({ status: 'pending' });
      const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: token() });
      expect(deleted.status).toBe(204);
      holding = false;
      await waitFor(() => !held.has(id), 10_000, 'the message delivered');
      await pipeline.settled();
      expect(r.deliveries).toEqual([]);
      expect(await getItem(keys.webhookEvent(id))).toMatchObject({ status: 'skipped', attempts: 0 });
    } finally {
      holding = false;
    }
  });
});

/** The endpoint as the API shows it, by id and in the organization's list (its entries in step). */
async function shownEndpoint(id: string) {
  const one = await world.call('GET', `/v1/webhooks/endpoints/${id}`, { token: token() });
  expect(one.status).toBe(200);
  const list = await world.call('GET', '/v1/webhooks/endpoints?limit=100', { token: token() });
  const listed = (list.body.items as { id: string }[]).find((item) => item.id === id);
  expect(listed).toEqual(one.body);
  return one.body as { enabled: boolean; disabled_reason: string | null; failure_count: number };
}

/** An endpoint with `failure_count` set as the deliverer would have left it. */
async function failingEndpoint(url: string, failureCount: number): Promise<WebhookEndpointRecord> {
  const { endpoint } = await loopbackEndpoint(world, url, ['customer.created']);
  const after = { ...endpoint, failure_count: failureCount, revision: endpoint.revision + 1 };
  await replaceWebhookEndpoint(world.table, endpoint, after);
  return after;
}

/**
 * A webhook event of `endpoint` at its last attempt (the ladder's nine retries spent, as if hours
 * had passed), queued as the relay queues one.
 */
async function lastAttemptOf(endpoint: WebhookEndpointRecord): Promise<string> {
  const at = new Date().toISOString();
  const id = webhookEventId(newId(), endpoint.id);
  await recordWebhookEvent(world.table, {
    id,
    event_id: newId(),
    endpoint_id: endpoint.id,
    organization_id: endpoint.organization_id,
    type: 'customer.created',
    payload: envelope('customer.created', at, { id: newId() }),
    created_at: at,
    modified_at: at,
    status: 'pending',
    round: 1,
    attempts: MAX_ATTEMPTS - 1,
    last_http_code: 500,
  });
  await pipeline.queue.send(JSON.stringify({ webhook_event_id: id, endpoint_id: endpoint.id, round: 1 }));
  return id;
}

describe('endpoint health', () => {
  it('a 410 Gone disables the endpoint at once (endpoint_gone), its list entries with it; nothing more is sent', async () => {
    const r = await receiver(() => 410);
    const { endpoint } = await loopbackEndpoint(world, r.url, ['customer.created']);
    const customer = async () =>
      world.call('POST', '/v1/customers/', {
        token: token(),
        body: { email: `gone-${newId()}@example.com` },
      });
    expect((await customer()).status).toBe(201);
    await waitFor(() => r.deliveries.length === 1, 15_000, 'the delivery');
    await pipeline.settled();
    expect(await shownEndpoint(endpoint.id)).toMatchObject({
      enabled: false,
      disabled_reason: 'endpoint_gone',
      failure_count: 0,
    });
    const id = String((r.deliveries[0] as Delivery).headers['webhook-id']);
    expect(await getItem(keys.webhookEvent(id))).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_http_code: 410,
    });
    expect((await customer()).status).toBe(201);
    await pipeline.drained({ endpointId: endpoint.id });
    expect(r.deliveries).toHaveLength(1);
  });

  it(`each event that exhausts its retries counts; at ${FAILED_EVENTS_DISABLE_THRESHOLD} in a row the endpoint is disabled (too_many_failures)`, async () => {
    const r = await receiver(() => ({ status: 500, body: 'down' }));
    const endpoint = await failingEndpoint(r.url, FAILED_EVENTS_DISABLE_THRESHOLD - 2);
    const first = await lastAttemptOf(endpoint);
    await waitFor(() => r.deliveries.length === 1, 15_000, 'the last attempt');
    await pipeline.settled();
    expect(await getItem(keys.webhookEvent(first))).toMatchObject({
      status: 'failed',
      attempts: MAX_ATTEMPTS,
    });
    expect(await shownEndpoint(endpoint.id)).toMatchObject({
      enabled: true,
      disabled_reason: null,
      failure_count: FAILED_EVENTS_DISABLE_THRESHOLD - 1,
    });
    await lastAttemptOf((await getWebhookEndpoint(world.table, endpoint.id)) as WebhookEndpointRecord);
    await waitFor(() => r.deliveries.length === 2, 15_000, 'the second last attempt');
    await pipeline.settled();
    expect(await shownEndpoint(endpoint.id)).toMatchObject({
      enabled: false,
      disabled_reason: 'too_many_failures',
      failure_count: FAILED_EVENTS_DISABLE_THRESHOLD,
    });
    // Enabled again by its owner (at a public URL: the API refuses loopback): reason and count cleared.
    const enabled = await world.call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, {
      token: token(),
      body: { enabled: true, url: 'https://hooks.example.com/recovered' },
    });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null, failure_count: 0 });
  });

  it('a delivered event clears the failure count; a failed attempt that is retried does not count', async () => {
    const ok = await receiver();
    const healthy = await failingEndpoint(ok.url, 2);
    await lastAttemptOf(healthy);
    await waitFor(() => ok.deliveries.length === 1, 15_000, 'the delivery');
    await pipeline.settled();
    expect(await shownEndpoint(healthy.id)).toMatchObject({ enabled: true, failure_count: 0 });

    const flaky = await receiver((n) => (n === 0 ? 500 : 200));
    const retried = await failingEndpoint(flaky.url, 1);
    const created = await world.call('POST', '/v1/customers/', {
      token: token(),
      body: { email: `flaky-${newId()}@example.com` },
    });
    expect(created.status).toBe(201);
    await waitFor(() => flaky.deliveries.length === 1, 15_000, 'the first attempt');
    // After the failed first attempt is recorded, before its retry (seconds later; the deliverer
    // records an attempt before it sets when the message comes back): not counted.
    const id = String((flaky.deliveries[0] as Delivery).headers['webhook-id']);
    await waitFor(
      async () => (await getItem(keys.webhookEvent(id)))?.attempts === 1,
      15_000,
      'the first attempt recorded',
    );
    expect(await getItem(keys.webhookEvent(id))).toMatchObject({ status: 'pending', attempts: 1 });
    expect(flaky.deliveries).toHaveLength(1);
    expect((await shownEndpoint(retried.id)).failure_count).toBe(1);
    await waitFor(() => flaky.deliveries.length === 2, 15_000, 'the retry');
    await pipeline.settled();
    expect((await shownEndpoint(retried.id)).failure_count).toBe(0);
  });

  it("an owner's change of the endpoint during an attempt wins; the deliverer decides again on it", async () => {
    let endpoint: WebhookEndpointRecord | undefined;
    // The receiver renames the endpoint while the attempt is in flight: the deliverer's write then
    // finds a newer revision, reads it again and applies the failure count on top of the rename.
    const r = await receiver(async () => {
      const current = (await getWebhookEndpoint(
        world.table,
        (endpoint as WebhookEndpointRecord).id,
      )) as WebhookEndpointRecord;
      await replaceWebhookEndpoint(world.table, current, {
        ...current,
        name: 'renamed meanwhile',
        revision: current.revision + 1,
      });
      return 500;
    });
    endpoint = await failingEndpoint(r.url, 0);
    await lastAttemptOf(endpoint);
    await waitFor(() => r.deliveries.length === 1, 15_000, 'the attempt');
    await pipeline.settled();
    const shown = await shownEndpoint(endpoint.id);
    expect(shown).toMatchObject({ name: 'renamed meanwhile', enabled: true, failure_count: 1 });
  });
});

describe('observability (issue 14)', () => {
  it("one correlation id from the request to the receiver: the outbox item, the relay's and the deliverer's lines; the deliverer's business metrics", async () => {
    const { lines, restore } = captureLines();
    try {
      const r = await receiver();
      const { endpoint } = await loopbackEndpoint(world, r.url, ['customer.created']);
      const created = await world.call('POST', '/v1/customers/', {
        token: token(),
        body: { email: `correlated-${newId()}@example.com` },
      });
      expect(created.status).toBe(201);
      await waitFor(() => r.deliveries.length === 1, 15_000, 'the delivery');
      await pipeline.settled();
      const request = lines.find((l) => l.message === 'request' && l.operation === 'create-customer');
      const correlationId = request?.request_id;
      expect(correlationId).toEqual(expect.any(String));
      const [stored] = await outboxOf(world.table, 'customer', created.body.id);
      expect((stored as unknown as { correlation_id: string }).correlation_id).toBe(correlationId);
      const webhookEventIdOf = String(r.deliveries[0]?.headers['webhook-id']);
      const relayed = lines.find(
        (l) => l.message === 'webhook event relayed' && l.correlation_id === correlationId,
      );
      expect(relayed?.webhook_event_ids).toContain(webhookEventIdOf);
      const attempt = lines.find(
        (l) => l.message === 'webhook delivery attempt' && l.webhook_event_id === webhookEventIdOf,
      );
      expect(attempt).toMatchObject({
        correlation_id: correlationId,
        endpoint_id: endpoint.id,
        outcome: 'delivered',
      });
      // The deliverer's batch line is its EMF document: the business metrics by name, counted.
      const metrics = lines.filter((l) => 'WebhookDeliveriesSucceeded' in l);
      expect(metrics.length).toBeGreaterThan(0);
      const names = (
        metrics[0] as { _aws: { CloudWatchMetrics: { Metrics: { Name: string }[] }[] } }
      )._aws.CloudWatchMetrics[0]?.Metrics.map((m) => m.Name);
      expect(names).toEqual(
        expect.arrayContaining([
          'WebhookDeliveriesSucceeded',
          'WebhookDeliveriesFailed',
          'WebhookEndpointsDisabled',
        ]),
      );
      expect(metrics.reduce((n, l) => n + Number(l.WebhookDeliveriesSucceeded), 0)).toBeGreaterThanOrEqual(1);
    } finally {
      restore();
    }
  });

  it('an endpoint disabled by a 410 counts once in WebhookEndpointsDisabled', async () => {
    const { lines, restore } = captureLines();
    try {
      const r = await receiver(() => ({ status: 410, body: 'gone' }));
      const { endpoint } = await loopbackEndpoint(world, r.url, ['customer.created']);
      await world.call('POST', '/v1/customers/', {
        token: token(),
        body: { email: `gone-${newId()}@example.com` },
      });
      await waitFor(() => r.deliveries.length === 1, 15_000, 'the delivery');
      await pipeline.settled();
      const attempt = lines.find(
        (l) => l.message === 'webhook delivery attempt' && l.endpoint_id === endpoint.id,
      );
      expect(attempt).toMatchObject({ http_code: 410, endpoint_disabled: 'endpoint_gone' });
      expect(lines.reduce((n, l) => n + Number(l.WebhookEndpointsDisabled ?? 0), 0)).toBe(1);
    } finally {
      restore();
    }
  });
});

describe('an attempt that got no answer', () => {
  it("names why in the deliverer's line (a refused connection), only `no answer` in the delivery log, and the endpoint's URL nowhere", async () => {
    const { lines, restore } = captureLines();
    try {
      // A loopback port nothing listens on any more: the connection is refused.
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const url = `http://127.0.0.1:${port}/hooks?token=do-not-log`;
      const { endpoint } = await loopbackEndpoint(world, url, ['customer.created']);
      await world.call('POST', '/v1/customers/', {
        token: token(),
        body: { email: `refused-${newId()}@example.com` },
      });
      const attemptOf = () =>
        lines.find((l) => l.message === 'webhook delivery attempt' && l.endpoint_id === endpoint.id);
      await waitFor(() => attemptOf() !== undefined, 15_000, 'the attempt');
      expect(attemptOf()).toMatchObject({
        http_code: null,
        error: 'ECONNREFUSED',
        outcome: 'retry',
        attempt: 1,
      });
      expect(JSON.stringify(attemptOf())).not.toContain('do-not-log');
      // The endpoint's owner reads no network detail: a refused port and a silent one are the same.
      const deliveries = await world.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpoint.id}`, {
        token: token(),
      });
      expect(deliveries.status).toBe(200);
      expect(deliveries.body.items.map((item: { response: string }) => item.response)).toEqual(['no answer']);
      // No more attempts: its retry finds the endpoint deleted and sends nothing.
      await softDeleteWebhookEndpoint(world.table, endpoint, new Date().toISOString());
    } finally {
      restore();
    }
  });
});

describe('customer.state_changed (issue 28)', () => {
  const newCustomer = async (organizationToken = token()) => {
    const reply = await world.call('POST', '/v1/customers/', {
      token: organizationToken,
      body: { email: `state-${newId()}@example.com` },
    });
    expect(reply.status).toBe(201);
    return reply.body as { id: string };
  };
  const stateEvents = async (customerId: string) =>
    (await outboxOf(world.table, 'customer', customerId)).filter((e) => e.type === 'customer.state_changed');
  const states = (r: Receiver, customerId: string) =>
    r.deliveries.filter(
      (d) => typeOf(d) === 'customer.state_changed' && JSON.parse(d.body).data.id === customerId,
    );
  const answeredState = async (customerId: string) => {
    const reply = await world.call('GET', `/v1/customers/${customerId}/state`, { token: token() });
    expect(reply.status).toBe(200);
    return reply.body;
  };
  /** The receivers of the test below, its customer and what it saw. */
  let listening: Receiver;
  let listeningId = '';
  let customerId = '';
  let meterName = '';

  it('nothing is written for an organization with no endpoint listening to it', async () => {
    const customer = await newCustomer();
    await subscribe(customer.id);
    await pipeline.settled();
    expect(pipeline.errors).toEqual([]);
    expect(await stateEvents(customer.id)).toEqual([]);
  });

  it('after Create Subscription and after Ingest Events: what Get Customer State answers then, verified by both SDK lines; no other endpoint gets it', async () => {
    listening = await receiver();
    const [notListening, tenant] = await Promise.all([receiver(), receiver()]);
    const { endpoint: listener, secret } = await loopbackEndpoint(world, listening.url, [
      'customer.state_changed',
    ]);
    listeningId = listener.id;
    const { endpoint: other } = await loopbackEndpoint(world, notListening.url, ['subscription.created']);
    // Another organization's endpoint, listening: a change of this organization's customer is not its.
    const { endpoint: foreign } = await loopbackEndpoint(world, tenant.url, ['customer.state_changed'], {
      organizationId: world.demo.other_organization.organization_id,
    });
    const customer = await newCustomer();
    customerId = customer.id;
    const subscription = await subscribe(customer.id);
    const withSubscription = () =>
      states(listening, customer.id).find((d) =>
        JSON.parse(d.body).data.active_subscriptions.some((s: { id: string }) => s.id === subscription.id),
      );
    await waitFor(() => withSubscription() !== undefined, 15_000, 'the state with the new subscription');
    const delivered = withSubscription() as Delivery;
    expect(JSON.parse(delivered.body).data).toEqual(await answeredState(customer.id));
    const headers = headersOf(delivered);
    expect(await webhooks.validateEvent(delivered.body, headers, secret)).toMatchObject({
      type: 'customer.state_changed',
    });
    // 0.49 parses the payload with its schema of WebhookCustomerStateChangedPayload.
    expect(validateV0(delivered.body, headers, secret)).toMatchObject({
      type: 'customer.state_changed',
      data: { id: customer.id, activeSubscriptions: [{ id: subscription.id }] },
    });

    // A meter counting the customer's events, then two events.
    meterName = `state.${newId()}`;
    const meter = await world.call('POST', '/v1/meters/', {
      token: token(),
      body: {
        name: `State ${meterName.slice(6, 14)}`,
        filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: meterName }] },
        aggregation: { func: 'count' },
      },
    });
    expect(meter.status).toBe(201);
    const ingested = await world.call('POST', '/v1/events/ingest', {
      token: token(),
      body: {
        events: [1, 2].map((i) => ({
          name: meterName,
          customer_id: customer.id,
          external_id: `${meterName}-${i}`,
        })),
      },
    });
    expect(ingested.status).toBe(200);
    const counted = () =>
      states(listening, customer.id).find((d) =>
        JSON.parse(d.body).data.active_meters.some(
          (m: { meter_id: string; consumed_units: number }) =>
            m.meter_id === meter.body.id && m.consumed_units === 2,
        ),
      );
    await waitFor(() => counted() !== undefined, 15_000, 'the state with the two events counted');
    expect(JSON.parse((counted() as Delivery).body).data).toEqual(await answeredState(customer.id));
    await pipeline.drained({ endpointId: other.id });
    await pipeline.drained({ endpointId: foreign.id });
    expect(notListening.deliveries.filter((d) => typeOf(d) === 'customer.state_changed')).toEqual([]);
    expect(tenant.deliveries).toEqual([]);
  });

  it("a replayed stream batch (the relay's, the aggregator's) writes and sends no second one", async () => {
    expect(customerId).not.toBe('');
    await pipeline.settled();
    const before = await stateEvents(customerId);
    const sent = states(listening, customerId).length;
    // The batches that carried the customer's changes: its subscription's insert, its usage events.
    const carries = (batch: { Records: { dynamodb?: { NewImage?: unknown } }[] }, text: string) =>
      batch.Records.some((r) => JSON.stringify(r.dynamodb?.NewImage ?? {}).includes(text));
    const relayed = relayBatches.filter((b) => carries(b, customerId));
    const aggregated = aggregatorBatches.filter((b) => carries(b, meterName));
    expect(relayed.length).toBeGreaterThan(0);
    expect(aggregated.length).toBeGreaterThan(0);
    for (const batch of relayed) await pipeline.relay(batch);
    for (const batch of aggregated) await pipeline.aggregate?.(batch);
    await pipeline.drained({ endpointId: listeningId });
    expect(await stateEvents(customerId)).toEqual(before);
    expect(states(listening, customerId)).toHaveLength(sent);
  });
});

describe('the run', () => {
  it('the relay and the deliverer never failed, and nothing reached the dead-letter queue', () => {
    expect(pipeline.errors).toEqual([]);
    expect(pipeline.deadLetter.size).toBe(0);
    expect(pipeline.relayed()).toBeGreaterThan(0);
  });
});
