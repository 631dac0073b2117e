/**
 * The transactional outbox, seen in the table: every change that emits webhook events writes them in
 * its own transaction, one item per event, in the object's event partition with increasing sort keys,
 * each holding the exact envelope `{type, timestamp, data}` whose `data` is the API's answer. A
 * refused change writes none. (That a change never exists without its events, nor events without
 * their change, under faults: test/integration/faults.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_RETENTION_DAYS } from '#shared/webhooks/events.ts';
import { outboxOf, type StoredEvent, typesOf } from '../support/outbox.ts';
import { sharedSegmentsRegistered } from '../support/subscription-counts.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('outbox');
  // A tenant that has signed up before: no first-of-its-shard registry put in the round trips counted.
  await sharedSegmentsRegistered(world.table, world.demo);
});
afterAll(() => world?.drop());

const token = () => world.demo.personal_access_token;

async function subscribe() {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: token(),
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
  });
  expect(reply.status).toBe(201);
  return reply.body as { id: string; created_at: string };
}

const patch = (id: string, body: unknown) =>
  world.call('PATCH', `/v1/subscriptions/${id}`, { token: token(), body });

/** The events a change added: what is there now beyond what was there before. */
async function added(id: string, change: () => Promise<Reply>) {
  const before = (await outboxOf(world.table, 'subscription', id)).length;
  const reply = await change();
  return { reply, events: (await outboxOf(world.table, 'subscription', id)).slice(before) };
}

function expectEnvelope(event: StoredEvent, data: unknown, at: string) {
  expect(event.envelope).toEqual({ type: event.type, timestamp: at, data });
  // The stored text is the exact body endpoints receive.
  expect(event.payload).toBe(JSON.stringify({ type: event.type, timestamp: at, data }));
  expect(event.organization_id).toBe(world.demo.organization_id);
  expect(event.expires_ttl).toBe(Math.floor(Date.parse(at) / 1000) + EVENT_RETENTION_DAYS * 86_400);
}

describe('Create Customer', () => {
  it('writes customer.created with the answer as data, in the same 3 round trips (token, guard marker, transaction)', async () => {
    world.resetCount();
    const reply = await world.call('POST', '/v1/customers/', {
      token: token(),
      body: { email: `outbox-${randomUUID()}@example.com`, name: 'Ada' },
    });
    expect(reply.status).toBe(201);
    expect(world.roundTrips()).toBe(3);
    const events = await outboxOf(world.table, 'customer', reply.body.id);
    expect(typesOf(events)).toEqual(['customer.created']);
    expectEnvelope(events[0] as StoredEvent, reply.body, reply.body.created_at);
  });

  it('a refused customer (taken e-mail) writes no event', async () => {
    const email = `outbox-${randomUUID()}@example.com`;
    const first = await world.call('POST', '/v1/customers/', { token: token(), body: { email } });
    const second = await world.call('POST', '/v1/customers/', { token: token(), body: { email } });
    expect(second.status).toBe(422);
    expect(typesOf(await outboxOf(world.table, 'customer', first.body.id))).toEqual(['customer.created']);
  });
});

describe('Create Subscription', () => {
  it('writes created, active, updated in that order (increasing sort keys), each with the answer', async () => {
    world.resetCount();
    const reply = await world.call('POST', '/v1/subscriptions/', {
      token: token(),
      body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
    });
    expect(world.roundTrips()).toBe(3);
    const events = await outboxOf(world.table, 'subscription', reply.body.id);
    expect(typesOf(events)).toEqual(['subscription.created', 'subscription.active', 'subscription.updated']);
    const keys = events.map((event) => event.SK);
    expect([...keys].sort()).toEqual(keys);
    expect(new Set(events.map((event) => event.id)).size).toBe(3);
    for (const event of events) expectEnvelope(event, reply.body, reply.body.created_at);
  });
});

describe('Update and Revoke Subscription', () => {
  it('cancel at period end: updated, canceled; canceling again: updated only', async () => {
    const { id } = await subscribe();
    const cancel = await added(id, () => patch(id, { cancel_at_period_end: true }));
    expect(typesOf(cancel.events)).toEqual(['subscription.updated', 'subscription.canceled']);
    const body = cancel.reply.body;
    for (const event of cancel.events) expectEnvelope(event, body, body.modified_at);
    const again = await added(id, () =>
      patch(id, { cancel_at_period_end: true, customer_cancellation_reason: 'unused' }),
    );
    expect(typesOf(again.events)).toEqual(['subscription.updated']);
  });

  it('uncancel: updated, uncanceled; uncanceling a live one: updated only', async () => {
    const { id } = await subscribe();
    const live = await added(id, () => patch(id, { cancel_at_period_end: false }));
    expect(typesOf(live.events)).toEqual(['subscription.updated']);
    await patch(id, { cancel_at_period_end: true });
    const uncancel = await added(id, () => patch(id, { cancel_at_period_end: false }));
    expect(typesOf(uncancel.events)).toEqual(['subscription.updated', 'subscription.uncanceled']);
  });

  it('revoke (PATCH or DELETE): updated, canceled, revoked; canceled before: updated, revoked', async () => {
    const a = await subscribe();
    const patched = await added(a.id, () => patch(a.id, { revoke: true }));
    expect(typesOf(patched.events)).toEqual([
      'subscription.updated',
      'subscription.canceled',
      'subscription.revoked',
    ]);
    const b = await subscribe();
    await patch(b.id, { cancel_at_period_end: true });
    const deleted = await added(b.id, () =>
      world.call('DELETE', `/v1/subscriptions/${b.id}`, { token: token() }),
    );
    expect(deleted.reply.status).toBe(200);
    expect(typesOf(deleted.events)).toEqual(['subscription.updated', 'subscription.revoked']);
    const body = deleted.reply.body;
    for (const event of deleted.events) expect(event.envelope.data).toEqual(body);
  });

  it('a refused change (an ended subscription) writes no event', async () => {
    const { id } = await subscribe();
    await patch(id, { revoke: true });
    const refused = await added(id, () => patch(id, { cancel_at_period_end: true }));
    expect(refused.reply.status).toBe(403);
    expect(refused.events).toEqual([]);
  });
});

/** A fresh customer of the demo organization, with an external id. */
async function newCustomer() {
  const reply = await world.call('POST', '/v1/customers/', {
    token: token(),
    body: { email: `outbox-${randomUUID()}@example.com`, name: 'Grace', external_id: `ext-${randomUUID()}` },
  });
  expect(reply.status).toBe(201);
  return reply.body as { id: string; external_id: string; email: string };
}

/** The events a change of customer `id` added. */
async function addedTo(kind: 'customer' | 'product', id: string, change: () => Promise<Reply>) {
  const before = (await outboxOf(world.table, kind, id)).length;
  const reply = await change();
  return { reply, events: (await outboxOf(world.table, kind, id)).slice(before) };
}

describe('Customer portal: cancel and uncancel', () => {
  const portal = (method: 'DELETE' | 'PATCH', id: string, body?: unknown) =>
    world.call(method, `/v1/customer-portal/subscriptions/${id}`, {
      token: world.demo.customer_session_token,
      ...(body === undefined ? {} : { body }),
    });
  const read = async (id: string) =>
    (await world.call('GET', `/v1/subscriptions/${id}`, { token: token() })).body;

  it("cancel (DELETE): updated, canceled; uncancel (PATCH): updated, uncanceled; data is the API's Subscription", async () => {
    const { id } = await subscribe();
    const cancel = await added(id, () => portal('DELETE', id));
    expect(cancel.reply.status).toBe(200);
    expect(typesOf(cancel.events)).toEqual(['subscription.updated', 'subscription.canceled']);
    const canceled = await read(id);
    for (const event of cancel.events) expectEnvelope(event, canceled, canceled.modified_at);
    const uncancel = await added(id, () => portal('PATCH', id, { cancel_at_period_end: false }));
    expect(uncancel.reply.status).toBe(200);
    expect(typesOf(uncancel.events)).toEqual(['subscription.updated', 'subscription.uncanceled']);
    const live = await read(id);
    for (const event of uncancel.events) expectEnvelope(event, live, live.modified_at);
  });

  it('a refused change (canceling twice) writes no event', async () => {
    const { id } = await subscribe();
    await portal('DELETE', id);
    const again = await added(id, () => portal('DELETE', id));
    expect(again.reply.status).toBeGreaterThanOrEqual(400);
    expect(again.events).toEqual([]);
  });
});

describe('Subscription clock', () => {
  it('a renewal: updated, cycled; an end at period end: updated, revoked; data is the Subscription as changed', async () => {
    const renewing = await subscribe();
    const ending = await subscribe();
    await patch(ending.id, { cancel_at_period_end: true });
    const before = {
      renewing: (await outboxOf(world.table, 'subscription', renewing.id)).length,
      ending: (await outboxOf(world.table, 'subscription', ending.id)).length,
    };
    const at = new Date(Date.now() + 35 * 86_400_000);
    const { createHandler } = await import('#functions/subscription-clock/handler.ts');
    await createHandler({ ...world.depsFor('subscription-clock'), now: () => at })({});
    const renewed = (await outboxOf(world.table, 'subscription', renewing.id)).slice(before.renewing);
    const ended = (await outboxOf(world.table, 'subscription', ending.id)).slice(before.ending);
    expect(typesOf(renewed)).toEqual(['subscription.updated', 'subscription.cycled']);
    expect(typesOf(ended)).toEqual(['subscription.updated', 'subscription.revoked']);
    const renewedNow = await world.call('GET', `/v1/subscriptions/${renewing.id}`, { token: token() });
    const endedNow = await world.call('GET', `/v1/subscriptions/${ending.id}`, { token: token() });
    expect(endedNow.body.status).toBe('canceled');
    for (const event of renewed) expectEnvelope(event, renewedNow.body, at.toISOString());
    for (const event of ended) expectEnvelope(event, endedNow.body, at.toISOString());
  });
});

describe('Update Customer, by id and by external id', () => {
  it.each(['id', 'external id'] as const)(
    'by %s: customer.updated with the answer as data, in the same 3 round trips (4 by external id)',
    async (by) => {
      const customer = await newCustomer();
      const path =
        by === 'id' ? `/v1/customers/${customer.id}` : `/v1/customers/external/${customer.external_id}`;
      world.resetCount();
      const { reply, events } = await addedTo('customer', customer.id, () =>
        world.call('PATCH', path, { token: token(), body: { name: `Renamed by ${by}` } }),
      );
      expect(reply.status).toBe(200);
      // By external id the customer is read after its list range (slim entries): one more.
      expect(world.roundTrips()).toBe(by === 'id' ? 3 : 4);
      expect(typesOf(events)).toEqual(['customer.updated']);
      expectEnvelope(events[0] as StoredEvent, reply.body, reply.body.modified_at);
    },
  );

  it('a body that changes nothing writes no event; a refused change (taken e-mail) writes none', async () => {
    const customer = await newCustomer();
    const other = await newCustomer();
    const same = await addedTo('customer', customer.id, () =>
      world.call('PATCH', `/v1/customers/${customer.id}`, { token: token(), body: { name: 'Grace' } }),
    );
    expect(same.reply.status).toBe(200);
    expect(same.events).toEqual([]);
    const taken = await addedTo('customer', customer.id, () =>
      world.call('PATCH', `/v1/customers/${customer.id}`, { token: token(), body: { email: other.email } }),
    );
    expect(taken.reply.status).toBe(422);
    expect(taken.events).toEqual([]);
  });
});

describe('Delete Customer, by id and by external id', () => {
  it.each([
    ['id', false],
    ['external id', true],
  ] as const)(
    'by %s (anonymize %s): customer.deleted with the customer as deleted, in 3 round trips (4 by external id)',
    async (by, anonymize) => {
      const customer = await newCustomer();
      const shown = (await world.call('GET', `/v1/customers/${customer.id}`, { token: token() })).body;
      const path =
        by === 'id' ? `/v1/customers/${customer.id}` : `/v1/customers/external/${customer.external_id}`;
      world.resetCount();
      const { reply, events } = await addedTo('customer', customer.id, () =>
        world.call('DELETE', `${path}?anonymize=${anonymize}`, { token: token() }),
      );
      expect(reply.status).toBe(204);
      expect(world.roundTrips()).toBe(by === 'id' ? 3 : 4);
      expect(typesOf(events)).toEqual(['customer.deleted']);
      const event = events[0] as StoredEvent;
      const { deleted_at: at } = event.envelope.data;
      expect(at).toEqual(expect.any(String));
      expectEnvelope(
        event,
        {
          ...shown,
          ...(anonymize
            ? {
                email: `${customer.id}@anonymized.invalid`,
                name: null,
                billing_address: null,
                locale: null,
                metadata: {},
              }
            : {}),
          external_id: null,
          deleted_at: at,
          modified_at: at,
        },
        at,
      );
      // Deleted: no further change, no further event.
      const again = await addedTo('customer', customer.id, () =>
        world.call('DELETE', `/v1/customers/${customer.id}`, { token: token() }),
      );
      expect(again.reply.status).toBe(404);
      expect(again.events).toEqual([]);
    },
  );
});

describe('Create and Update Product', () => {
  const createProduct = () =>
    world.call('POST', '/v1/products/', {
      token: token(),
      body: {
        name: `Outbox ${randomUUID().slice(0, 8)}`,
        recurring_interval: 'month',
        prices: [{ amount_type: 'fixed', price_amount: 900, price_currency: 'usd' }],
      },
    });

  it('create: product.created with the answer as data, in the same 3 round trips', async () => {
    world.resetCount();
    const reply = await createProduct();
    expect(reply.status).toBe(201);
    expect(world.roundTrips()).toBe(3);
    const events = await outboxOf(world.table, 'product', reply.body.id);
    expect(typesOf(events)).toEqual(['product.created']);
    expectEnvelope(events[0] as StoredEvent, reply.body, reply.body.created_at);
  });

  it('update: product.updated with the answer as data, in the same 3 round trips; no change, no event', async () => {
    const created = (await createProduct()).body;
    world.resetCount();
    const { reply, events } = await addedTo('product', created.id, () =>
      world.call('PATCH', `/v1/products/${created.id}`, { token: token(), body: { is_archived: true } }),
    );
    expect(reply.status).toBe(200);
    expect(world.roundTrips()).toBe(3);
    expect(typesOf(events)).toEqual(['product.updated']);
    expectEnvelope(events[0] as StoredEvent, reply.body, reply.body.modified_at);
    const same = await addedTo('product', created.id, () =>
      world.call('PATCH', `/v1/products/${created.id}`, { token: token(), body: { is_archived: true } }),
    );
    expect(same.reply.status).toBe(200);
    expect(same.events).toEqual([]);
  });
});
