/**
 * List Webhook Deliveries and Redeliver Webhook Event against DynamoDB Local, with the webhook
 * pipeline running (relay, deliverer, in-process queue), every function under its template policy.
 * The other demo organization is used for exact counts: nothing else delivers there.
 */
// On a DynamoDB Local of its own: it reads its table's stream (test/support/private-engine.ts).

import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DELIVERY_LIST_SHARDS,
  DELIVERY_LOG_DAYS,
  deliveryListPartition,
  endpointDeliveriesOwner,
  listDeliveryPage,
  type Redelivery,
  redeliveryMessages,
} from '#shared/data/deliveries.ts';
import { keys, REDELIVERY_SORT_KEY_PREFIX } from '#shared/data/table.ts';
import { outboxOf } from '../support/outbox.ts';
import { loopbackEndpoint, startTestPipeline, type TestPipeline } from '../support/pipeline.ts';
import { usePrivateEngine } from '../support/private-engine.ts';
import { type Delivery, receiversClosedAfterEach } from '../support/receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

usePrivateEngine();

let world: World;
let pipeline: TestPipeline;
beforeAll(async () => {
  world = await createWorld('webhook-deliveries');
  // Its stream starts with the pipeline: the demo seed's writes are not relayed.
  pipeline = await startTestPipeline(world);
});
afterAll(async () => {
  await pipeline?.stop();
  await world?.drop();
});
const receiver = receiversClosedAfterEach();

const other = () => world.demo.other_organization;
const list = (query = '', token = other().personal_access_token) =>
  world.call('GET', `/v1/webhooks/deliveries${query}`, { token });
const redeliver = (id: string, token = other().personal_access_token, headers?: Record<string, string>) =>
  world.call('POST', `/v1/webhooks/events/${id}/redeliver`, { token, ...(headers ? { headers } : {}) });
const ids = (reply: Reply) => (reply.body.items as { id: string }[]).map((item) => item.id);
const webhookIdOf = (d: Delivery) => String(d.headers['webhook-id']);

/** Endpoints A (first answer 500, then 200) and B (204) of the other organization, and one customer.created. */
async function scene() {
  const a = await receiver((n) => (n === 0 ? { status: 500, body: 'try again' } : 200));
  const b = await receiver();
  const organizationId = other().organization_id;
  const endpointA = (await loopbackEndpoint(world, a.url, ['customer.created'], { organizationId })).endpoint;
  const endpointB = (await loopbackEndpoint(world, b.url, ['customer.created'], { organizationId })).endpoint;
  const created = await world.call('POST', '/v1/customers/', {
    token: other().personal_access_token,
    body: { email: `deliveries-${Date.now()}@example.com` },
  });
  expect(created.status).toBe(201);
  await waitFor(() => a.deliveries.length === 2 && b.deliveries.length === 1, 20_000, 'three attempts');
  await pipeline.settled();
  const [event] = await outboxOf(world.table, 'customer', created.body.id);
  return { a, b, endpointA, endpointB, event: event as NonNullable<typeof event> };
}

let shared: Awaited<ReturnType<typeof scene>>;

describe('List Webhook Deliveries (GET /v1/webhooks/deliveries)', () => {
  beforeAll(async () => {
    shared = await scene();
  }, 60_000);

  it('every attempt of the organization, newest first, with its answer and its webhook event: auth, per shard its counts and entries, one batch', async () => {
    world.resetCount();
    const reply = await list();
    expect(reply.status).toBe(200);
    expect(world.roundTripsOf('list-webhook-deliveries')).toBe(1 + 2 * DELIVERY_LIST_SHARDS + 1);
    expect(reply.body.pagination).toEqual({ total_count: 3, max_page: 1 });
    const items = reply.body.items as {
      id: string;
      created_at: string;
      succeeded: boolean;
      http_code: number | null;
      response: string | null;
      webhook_event: Record<string, unknown>;
    }[];
    const times = items.map((item) => item.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    const aId = webhookIdOf(shared.a.deliveries[0] as Delivery);
    const ofA = items.filter((item) => item.webhook_event.id === aId);
    // Newest first: A's retry (200), then its first attempt (500).
    expect(ofA.map((item) => [item.succeeded, item.http_code, item.response])).toEqual([
      [true, 200, ''],
      [false, 500, 'try again'],
    ]);
    for (const item of items) {
      expect(item.webhook_event).toMatchObject({
        type: 'customer.created',
        payload: shared.event.payload,
        api_version: '2026-10',
        is_archived: false,
        skipped: false,
      });
    }
    // The event as the attempt left it: pending after A's first attempt, delivered after the second.
    expect(ofA.map((item) => item.webhook_event.succeeded)).toEqual([true, null]);
  });

  it("endpoint_id (repeatable) and succeeded filter from the lists' keys; paging and sorting as every list", async () => {
    const { endpointA, endpointB } = shared;
    expect((await list(`?endpoint_id=${endpointA.id}`)).body.pagination.total_count).toBe(2);
    expect((await list(`?endpoint_id=${endpointB.id}`)).body.pagination.total_count).toBe(1);
    const both = await list(`?endpoint_id=${endpointA.id}&endpoint_id=${endpointB.id.toUpperCase()}`);
    expect(both.body.pagination.total_count).toBe(3);
    expect(ids(both)).toEqual(ids(await list()));
    const failed = await list('?succeeded=false');
    expect(failed.body.items.map((item: { http_code: number }) => item.http_code)).toEqual([500]);
    const aSucceeded = await list(`?succeeded=true&endpoint_id=${endpointA.id}`);
    expect(aSucceeded.body.pagination.total_count).toBe(1);
    expect(aSucceeded.body.items[0].http_code).toBe(200);

    const all = ids(await list());
    const page2 = await list('?limit=2&page=2');
    expect(page2.body.pagination).toEqual({ total_count: 3, max_page: 2 });
    expect(ids(page2)).toEqual(all.slice(2));
    expect(ids(await list('?sorting=created_at'))).toEqual([...all].reverse());
    world.resetCount();
    expect((await list('?page=5')).body).toEqual({ items: [], pagination: { total_count: 3, max_page: 1 } });
    // Past the end: the counts only.
    expect(world.roundTripsOf('list-webhook-deliveries')).toBe(1 + DELIVERY_LIST_SHARDS);
  });

  it("a page deeper than page × limit = 2000 is the contract's 422 naming page (its read would grow with it)", async () => {
    const deep = await list('?page=21&limit=100');
    expect(deep.status).toBe(422);
    expect(deep.body.error).toBe('PolarRequestValidationError');
    expect(deep.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([['query', 'page']]);
    expect((await list('?page=20&limit=100')).status).toBe(200);
  });

  it('the payload is stored once, in the outbox item: no webhook event, attempt or list entry holds a copy', async () => {
    const organizationId = other().organization_id;
    const aId = webhookIdOf(shared.a.deliveries[0] as Delivery);
    const stored = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.webhookEvent(aId).PK },
      }),
    );
    const entries = await Promise.all(
      Array.from({ length: DELIVERY_LIST_SHARDS }, (_, shard) =>
        world.table.doc.send(
          new QueryCommand({
            TableName: world.table.name,
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': deliveryListPartition(organizationId, shard) },
          }),
        ),
      ),
    );
    const items = [...(stored.Items ?? []), ...entries.flatMap((found) => found.Items ?? [])];
    expect(items.length).toBeGreaterThan(3);
    for (const item of items) expect(JSON.stringify(item)).not.toContain(shared.event.payload.slice(0, 40));
  });

  it("another organization's endpoint matches nothing; the caller sees only its organizations' attempts", async () => {
    const theirs = await list(`?endpoint_id=${shared.endpointA.id}`, world.demo.personal_access_token);
    expect(theirs.status).toBe(200);
    expect(theirs.body.pagination.total_count).toBe(0);
    const mine = await list('', world.demo.personal_access_token);
    const aId = webhookIdOf(shared.a.deliveries[0] as Delivery);
    expect(
      (mine.body.items as { webhook_event: { id: string } }[]).some((item) => item.webhook_event.id === aId),
    ).toBe(false);
  });

  it.each([
    ['start_timestamp', '2026-01-01T00:00:00Z'],
    ['end_timestamp', '2026-01-01T00:00:00Z'],
    ['query', 'abc'],
    ['http_code_class', '5xx'],
    ['event_type', 'customer.created'],
  ])('%s cannot be answered from a key: 422 naming it', async (name, value) => {
    const reply = await list(`?${name}=${value}`);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toBe('PolarRequestValidationError');
    expect(reply.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([['query', name]]);
  });

  it("bad parameters are the contract's 422; no webhooks scope is 403; no token 401", async () => {
    for (const query of ['?endpoint_id=nope', '?succeeded=maybe', '?sorting=url', '?limit=0']) {
      const reply = await list(query);
      expect(reply.status, query).toBe(422);
      expect(reply.body.error, query).toBe('RequestValidationError');
    }
    expect((await list('', world.demo.personal_access_token_without_scopes)).status).toBe(403);
    expect((await world.call('GET', '/v1/webhooks/deliveries')).status).toBe(401);
  });

  it("attempts leave the list with their day's count once the log's days have passed; nothing is kept per expiry, and the relay takes a removal (replayed) as nothing", async () => {
    const organizationId = other().organization_id;
    const page = (now: Date) =>
      listDeliveryPage(world.table, [organizationId], {}, [], 0, 10, now, 1_000_000);
    const today = await page(new Date());
    expect(today.total).toBe(3);
    expect(today.items.map(({ payload }) => payload)).toEqual([0, 1, 2].map(() => shared.event.payload));
    // The last day they are shown, and the first day they are not (TTL removes them later still).
    const lastDay = new Date(Date.now() + DELIVERY_LOG_DAYS * 86_400_000);
    expect((await page(lastDay)).total).toBe(3);
    const past = await page(new Date(lastDay.getTime() + 86_400_000));
    expect(past).toEqual({ items: [], total: 0 });
    // DynamoDB's TTL removing an entry reaches the relay (a mapping created before the redesign
    // still hands it over): nothing is written and the batch succeeds, however often it comes.
    const [entry] = (
      await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: {
            ':pk': deliveryListPartition(endpointDeliveriesOwner(organizationId, shared.endpointB.id), 0),
          },
        }),
      )
    ).Items ?? [{ PK: 'LIST#DELIVERY#x#S0', SK: 'at#x' }];
    const removal = {
      eventName: 'REMOVE' as const,
      dynamodb: { Keys: { PK: { S: String(entry?.PK) }, SK: { S: String(entry?.SK) } } },
    };
    const legacy = {
      eventName: 'REMOVE' as const,
      dynamodb: { Keys: { PK: { S: `LIST#DELIVERY#${organizationId}` }, SK: { S: 'created_at#x#y' } } },
    };
    world.resetCount();
    await pipeline.relay({ Records: [removal, legacy, removal] });
    await pipeline.relay({ Records: [removal, legacy] });
    expect(world.roundTripsOf('webhook-relay')).toBe(0);
    expect((await list()).body.pagination.total_count).toBe(3);
  });
});

describe('Redeliver Webhook Event (POST /v1/webhooks/events/{id}/redeliver)', () => {
  it('202 with a null body; the event is sent again with the same webhook-id and body, a new round', async () => {
    const b = await receiver();
    const { endpoint } = await loopbackEndpoint(world, b.url, ['customer.created'], {
      organizationId: other().organization_id,
    });
    await world.call('POST', '/v1/customers/', {
      token: other().personal_access_token,
      body: { email: `redeliver-${Date.now()}@example.com` },
    });
    await waitFor(() => b.deliveries.length === 1, 15_000, 'the delivery');
    await pipeline.settled();
    const id = webhookIdOf(b.deliveries[0] as Delivery);
    world.resetCount();
    const reply = await redeliver(id);
    expect(reply.status).toBe(202);
    expect(reply.raw).toBe('null');
    // The token, the round's transaction (no idempotency key: no record). The relay queues it. Its
    // own calls only: on a loaded machine the pipeline's were counted too (3 for 2, twice in five runs).
    expect(world.roundTripsOf('redeliver-webhook-event')).toBe(2);
    await waitFor(() => b.deliveries.length === 2, 15_000, 'the redelivery');
    await pipeline.settled();
    const [first, second] = b.deliveries as [Delivery, Delivery];
    expect(webhookIdOf(second)).toBe(id);
    expect(second.body).toBe(first.body);
    const stored = (
      await world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.webhookEvent(id) }))
    ).Item;
    expect(stored).toMatchObject({ round: 2, attempts: 1, status: 'succeeded' });
    const attempts = await list(`?endpoint_id=${endpoint.id}`);
    expect(attempts.body.pagination.total_count).toBe(2);
  });

  it('with an Idempotency-Key, a retry answers the same and starts no second round', async () => {
    const b = await receiver();
    await loopbackEndpoint(world, b.url, ['customer.created'], { organizationId: other().organization_id });
    await world.call('POST', '/v1/customers/', {
      token: other().personal_access_token,
      body: { email: `idem-${Date.now()}@example.com` },
    });
    await waitFor(() => b.deliveries.length === 1, 15_000, 'the delivery');
    const id = webhookIdOf(b.deliveries[0] as Delivery);
    const key = { 'Idempotency-Key': `redeliver-${id}` };
    const [one, two] = [await redeliver(id, undefined, key), await redeliver(id, undefined, key)];
    expect([one.status, two.status]).toEqual([202, 202]);
    await waitFor(() => b.deliveries.length === 2, 15_000, 'the redelivery');
    await pipeline.drained({ webhookEventId: id });
    expect(b.deliveries).toHaveLength(2);
  });

  it('two Redelivers in a row: the relay queues the latest round only, once, from both requests in one batch', async () => {
    const b = await receiver();
    await loopbackEndpoint(world, b.url, ['customer.created'], { organizationId: other().organization_id });
    await world.call('POST', '/v1/customers/', {
      token: other().personal_access_token,
      body: { email: `twice-${Date.now()}@example.com` },
    });
    await waitFor(() => b.deliveries.length === 1, 15_000, 'the delivery');
    await pipeline.settled();
    const id = webhookIdOf(b.deliveries[0] as Delivery);
    expect((await redeliver(id)).status).toBe(202);
    expect((await redeliver(id)).status).toBe(202);
    const found = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
        ExpressionAttributeValues: { ':pk': keys.webhookEvent(id).PK, ':sk': REDELIVERY_SORT_KEY_PREFIX },
        ConsistentRead: true,
      }),
    );
    const requests = (found.Items ?? []) as Redelivery[];
    expect(requests).toHaveLength(2);
    // Both requests' stream records in one batch (the same event twice in one batch read), as the
    // relay may get them: one message, for round 3; the superseded round 2 sends nothing.
    const messages = await redeliveryMessages(world.table, requests);
    expect(messages).toEqual([
      {
        webhook_event_id: id,
        endpoint_id: expect.any(String),
        round: 3,
        event_key: expect.any(Object),
        organization_id: other().organization_id,
      },
    ]);
    await waitFor(() => b.deliveries.length >= 2, 15_000, 'the redelivery');
    await pipeline.settled();
    const stored = (
      await world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.webhookEvent(id) }))
    ).Item;
    expect(stored).toMatchObject({ round: 3, attempts: 1, status: 'succeeded' });
  });

  it('to an endpoint deleted since: nothing is sent, the event is skipped', async () => {
    const b = await receiver();
    const { endpoint } = await loopbackEndpoint(world, b.url, ['customer.created'], {
      organizationId: other().organization_id,
    });
    await world.call('POST', '/v1/customers/', {
      token: other().personal_access_token,
      body: { email: `skipped-${Date.now()}@example.com` },
    });
    await waitFor(() => b.deliveries.length === 1, 15_000, 'the delivery');
    const id = webhookIdOf(b.deliveries[0] as Delivery);
    const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, {
      token: other().personal_access_token,
    });
    expect(deleted.status).toBe(204);
    expect((await redeliver(id)).status).toBe(202);
    await pipeline.drained({ endpointId: endpoint.id });
    expect(b.deliveries).toHaveLength(1);
    const stored = (
      await world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.webhookEvent(id) }))
    ).Item;
    expect(stored).toMatchObject({ round: 2, status: 'skipped' });
  });

  it("another organization's event and an unknown id are the same 404; nothing is queued or changed", async () => {
    const b = await receiver();
    await loopbackEndpoint(world, b.url, ['customer.created'], { organizationId: other().organization_id });
    await world.call('POST', '/v1/customers/', {
      token: other().personal_access_token,
      body: { email: `tenant-${Date.now()}@example.com` },
    });
    await waitFor(() => b.deliveries.length === 1, 15_000, 'the delivery');
    await pipeline.settled();
    const id = webhookIdOf(b.deliveries[0] as Delivery);
    const before = (
      await world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.webhookEvent(id) }))
    ).Item;
    const theirs = await redeliver(id, world.demo.personal_access_token);
    const unknown = await redeliver('00000000-0000-4000-8000-000000000000');
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(unknown.body);
    expect(unknown.body.error).toBe('ResourceNotFound');
    await pipeline.settled();
    expect(b.deliveries).toHaveLength(1);
    const after = (
      await world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.webhookEvent(id) }))
    ).Item;
    expect(after).toEqual(before);
  });

  it("needs webhooks:write (a read-only caller gets 403); a malformed id is the contract's 422", async () => {
    expect(
      (
        await redeliver(
          '00000000-0000-4000-8000-000000000000',
          world.demo.personal_access_token_without_scopes,
        )
      ).status,
    ).toBe(403);
    const bad = await redeliver('nope');
    expect(bad.status).toBe(422);
    expect(bad.body.error).toBe('RequestValidationError');
  });
});

describe('the run', () => {
  it('the relay and the deliverer never failed, and nothing reached the dead-letter queue', () => {
    expect(pipeline.errors).toEqual([]);
    expect(pipeline.deadLetter.size).toBe(0);
  });
});
