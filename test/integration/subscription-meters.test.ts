/**
 * `Subscription.meters` against DynamoDB Local under the functions' deployed policies: for a
 * subscription holding metered prices, Get / List Subscriptions and the portal's Get / List answer
 * one SubscriptionMeter per meter, whose `consumed_units` and `amount` equal a plain fold of the
 * events that arrived in the current period (count, sum, the cap); the period's boundary in hours of
 * arrival; an ended subscription's period; the 500-read-unit bound (503 for one, 422 at `limit` for
 * a page); round trips; the write answers and webhook payloads (Create, Update, Revoke, the
 * portal's cancel and uncancel) carry what Get answers after the write, read before it (a 503 past
 * the bound writes nothing), and a free subscription's create reads nothing more.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, createCustomerSession } from '#scripts/admin/commands.ts';
import {
  customerMeterId,
  DAY_VALUE_PREFIX,
  seenKey,
  storedCustomerMeter,
  storedHourAggregate,
} from '#shared/data/customer-meters.ts';
import { queryAll } from '#shared/data/dynamo.ts';
import { keys } from '#shared/data/table.ts';
import { meteredAmount } from '#shared/domain/metered-amount.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { meterHours } from '#shared/services/subscription-meters.ts';
import { documentedReply } from '../support/contract.ts';
import { heavyCountHours, heavyUniqueHours, RECURRING_VALUES } from '../support/heavy-hours.ts';
import { outboxOf, typesOf } from '../support/outbox.ts';
import { putItems } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('subscription-meters');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const HOUR = 3_600_000;

interface Meter {
  id: string;
  name: string;
}

/** A meter of events named `name` (created a day ago, so that it counts every event seeded after). */
async function meter(name: string, aggregation: Record<string, unknown>): Promise<Meter> {
  const record = newMeter(
    {
      name: `Meter ${randomUUID().slice(0, 8)}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation: aggregation as never,
    },
    world.demo.organization_id,
    new Date(Date.now() - 400 * 24 * HOUR),
  );
  await storeNewMeter(world.admin.table, record);
  return { id: record.id, name };
}

/** Events of `customerId` that arrived at the given instants, folded by the meter aggregator itself. */
async function arrive(
  customerId: string,
  name: string,
  events: { at: number; tokens?: number }[],
): Promise<void> {
  await aggregateEvents(
    { table: world.admin.table, now: () => new Date() },
    `seed-${randomUUID()}`,
    events.map((event, i) => ({
      sequence: String(i + 1),
      event: {
        id: randomUUID(),
        organization_id: world.demo.organization_id,
        name,
        timestamp_us: event.at * 1000,
        external_id: null,
        customer_id: customerId,
        external_customer_id: null,
        metadata: JSON.stringify(event.tokens === undefined ? {} : { tokens: event.tokens }),
        ingest_request: randomUUID(),
        ingested_at: new Date(event.at).toISOString(),
      },
    })),
  );
}

/** A product with a free fixed price and two metered prices: calls (count) and tokens (sum, capped). */
async function meteredProduct(calls: Meter, tokens: Meter) {
  const reply = await world
    .call('POST', '/v1/products/', {
      token: pat(),
      body: {
        name: `Usage ${randomUUID()}`,
        recurring_interval: 'month',
        prices: [
          { amount_type: 'fixed', price_amount: 0 },
          { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: calls.id },
          { amount_type: 'metered_unit', unit_amount: '2', cap_amount: 100, meter_id: tokens.id },
        ],
      },
    })
    .then((r) => documentedReply('createProduct', r));
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string };
}

async function subscribe(productId: string, customerId: string) {
  const reply = await world
    .call('POST', '/v1/subscriptions/', {
      token: pat(),
      body: { product_id: productId, customer_id: customerId },
    })
    .then((r) => documentedReply('createSubscription', r));
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; current_period_start: string; meters: unknown[] };
}

/** Moves a subscription's current period (operator access): the boundary tests' instants. */
async function setPeriod(id: string, start: number, end: number): Promise<void> {
  await world.table.doc.send(
    new UpdateCommand({
      TableName: world.table.name,
      Key: keys.subscription(id),
      UpdateExpression: 'SET current_period_start = :s, current_period_end = :e',
      ExpressionAttributeValues: { ':s': new Date(start).toISOString(), ':e': new Date(end).toISOString() },
    }),
  );
}

const storedItem = async (id: string) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: keys.subscription(id), ConsistentRead: true }),
    )
  ).Item;

const getSubscription = (id: string) =>
  world
    .call('GET', `/v1/subscriptions/${id}`, { token: pat() })
    .then((r) => documentedReply('getSubscription', r));
const listSubscriptions = (query: string) =>
  world
    .call('GET', `/v1/subscriptions/?${query}`, { token: pat() })
    .then((r) => documentedReply('listSubscriptions', r));

interface Shown {
  meter_id: string;
  consumed_units: number;
  credited_units: number;
  amount: number;
  meter: { id: string; aggregation: { func: string } };
}
const byMeter = (meters: Shown[]) => new Map(meters.map((m) => [m.meter_id, m]));
/** The meters as the portal shows them: the meter's id, name and timestamps only. */
const portalView = (meters: (Shown & { meter: Record<string, unknown> })[]) =>
  meters.map(({ meter, ...usage }) => ({
    ...usage,
    meter: { created_at: meter.created_at, modified_at: meter.modified_at, id: meter.id, name: meter.name },
  }));

/** A customer with its own calls and tokens meters and a product pricing both, not yet subscribed. */
async function unsubscribed() {
  const customer = await createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `meters+${randomUUID()}@example.com`,
  });
  const name = `usage.${randomUUID()}`;
  const calls = await meter(name, { func: 'count' });
  const tokens = await meter(name, { func: 'sum', property: 'tokens' });
  const product = await meteredProduct(calls, tokens);
  return { customer, name, calls, tokens, product };
}

/** The same, and the customer's subscription to the product. */
async function setting() {
  const unsubscribedSetting = await unsubscribed();
  const { customer, product } = unsubscribedSetting;
  return { ...unsubscribedSetting, subscription: await subscribe(product.id, customer.id) };
}

describe('Subscription.meters', () => {
  it('one meter per metered price: consumed units and amounts equal a plain fold of the period’s events (count, sum, the cap)', async () => {
    const { customer, name, calls, tokens, subscription } = await setting();
    // The create's answer carries its meters: the fresh customer's usage before it, none.
    expect((subscription.meters as Shown[]).map((m) => m.consumed_units)).toEqual([0, 0]);
    const now = Date.now();
    const start = now - 30 * 24 * HOUR;
    await setPeriod(subscription.id, start, now + 24 * HOUR);
    const events = Array.from({ length: 12 }, (_, i) => ({
      at: start + HOUR + i * 37 * HOUR,
      tokens: 3 + i,
    }));
    await arrive(customer.id, name, events);
    const got = await getSubscription(subscription.id);
    expect(got.status).toBe(200);
    const meters = byMeter(got.body.meters as Shown[]);
    expect([...meters.keys()].sort()).toEqual([calls.id, tokens.id].sort());
    const count = events.length;
    const sum = events.reduce((s, e) => s + (e.tokens ?? 0), 0);
    expect(meters.get(calls.id)).toMatchObject({
      consumed_units: count,
      credited_units: 0,
      amount: Math.round(count * 0.5),
      meter: { id: calls.id, aggregation: { func: 'count' } },
      modified_at: null,
    });
    // 2 cents per token, capped at 100.
    expect(sum * 2).toBeGreaterThan(100);
    expect(meters.get(tokens.id)).toMatchObject({ consumed_units: sum, amount: 100 });
    // Under the cap: a fold of fewer events.
    const few = await setting();
    await arrive(few.customer.id, few.name, [
      { at: now, tokens: 7 },
      { at: now, tokens: 11 },
    ]);
    const under = byMeter((await getSubscription(few.subscription.id)).body.meters as Shown[]);
    expect(under.get(few.tokens.id)).toMatchObject({
      consumed_units: 18,
      amount: meteredAmount('2', 100, 18, 0),
    });
    expect(under.get(few.calls.id)).toMatchObject({ consumed_units: 2, amount: 1 });
    // List Subscriptions and the portal answer the same meters.
    const listed = await listSubscriptions(`customer_id=${customer.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.items[0].meters).toEqual(got.body.meters);
    const session = (await createCustomerSession(world.admin, { customer })).token;
    const portalGet = await world
      .call('GET', `/v1/customer-portal/subscriptions/${subscription.id}`, { token: session })
      .then((r) => documentedReply('getCustomerSubscription', r));
    expect(portalGet.body.meters).toEqual(portalView(got.body.meters));
    const portalList = await world
      .call('GET', '/v1/customer-portal/subscriptions/', { token: session })
      .then((r) => documentedReply('listCustomerSubscriptions', r));
    expect(portalList.body.items[0].meters).toEqual(portalView(got.body.meters));
  });

  it('the period’s boundary: an event that arrived before current_period_start’s hour is not counted, one of its hour is; the end’s hour is the next period’s', async () => {
    const { customer, name, calls, subscription } = await setting();
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const start = hour - 10 * HOUR; // on an hour: the boundary is exact
    const end = hour + 5 * HOUR;
    await setPeriod(subscription.id, start, end);
    await arrive(customer.id, name, [
      { at: start - 1 }, // the millisecond before the period: not counted
      { at: start - 3 * HOUR },
      { at: start }, // counted
      { at: start + 2 * HOUR + 5 }, // counted
    ]);
    const shown = byMeter((await getSubscription(subscription.id)).body.meters as Shown[]);
    expect(shown.get(calls.id)?.consumed_units).toBe(2);
    // The customer meter (all time) holds the four.
    const all = await world.call('GET', `/v1/customer-meters/${customerMeterId(customer.id, calls.id)}`, {
      token: pat(),
    });
    expect(all.body.consumed_units).toBe(4);
    // The hours a period counts: from its start's hour, up to but not including its end's hour.
    const period = (s: number, e: number, ended: number | null = null) => ({
      current_period_start: new Date(s).toISOString(),
      current_period_end: new Date(e).toISOString(),
      ended_at: ended === null ? null : new Date(ended).toISOString(),
    });
    const h = (t: number) => new Date(t).toISOString().slice(0, 13);
    const mid = start + 30 * 60_000;
    expect(meterHours(period(mid, mid + 48 * HOUR), new Date(mid + 100 * HOUR))).toEqual({
      from: h(mid),
      to: h(mid + 47 * HOUR),
    });
    // The next period starts with the hour this one left out: no hour in two periods, none in none.
    expect(meterHours(period(mid + 48 * HOUR, mid + 96 * HOUR), new Date(mid + 49 * HOUR))?.from).toBe(
      h(mid + 48 * HOUR),
    );
    expect(meterHours(period(mid, mid + 48 * HOUR), new Date(mid + 2 * HOUR))?.to).toBe(h(mid + 2 * HOUR));
    expect(meterHours(period(mid, mid + 48 * HOUR, mid + 3 * HOUR), new Date(mid + 40 * HOUR))?.to).toBe(
      h(mid + 3 * HOUR),
    );
  });

  it('an ended subscription counts up to the hour it ended in; later events are not its', async () => {
    const { customer, name, calls, subscription } = await setting();
    const now = Date.now();
    await setPeriod(subscription.id, now - 10 * HOUR, now + 20 * 24 * HOUR);
    await arrive(customer.id, name, [{ at: now - 8 * HOUR }]);
    const revoked = await world.call('DELETE', `/v1/subscriptions/${subscription.id}`, { token: pat() });
    expect(revoked.status).toBe(200);
    expect(byMeter(revoked.body.meters).get(calls.id)?.consumed_units).toBe(1);
    // Ended six hours ago (operator access): the events since, up to now, are not its.
    await world.table.doc.send(
      new UpdateCommand({
        TableName: world.table.name,
        Key: keys.subscription(subscription.id),
        UpdateExpression: 'SET ended_at = :e',
        ExpressionAttributeValues: { ':e': new Date(now - 6 * HOUR).toISOString() },
      }),
    );
    await arrive(customer.id, name, [{ at: now - 4 * HOUR }, { at: now - HOUR }]);
    const shown = byMeter((await getSubscription(subscription.id)).body.meters as Shown[]);
    expect(shown.get(calls.id)?.consumed_units).toBe(1);
  });

  it('a subscription without metered prices: meters [] at no extra round trip; a metered one: the meters’ batch and a usage Query per meter', async () => {
    world.resetCount();
    expect((await getSubscription(world.demo.subscription_id)).body.meters).toEqual([]);
    expect(world.roundTripsOf('get-subscription')).toBe(3);
    const { subscription } = await setting();
    world.resetCount();
    expect((await getSubscription(subscription.id)).body.meters).toHaveLength(2);
    // Token, subscription, customer and product, the two meters, two usage Queries side by side.
    expect(world.roundTripsOf('get-subscription')).toBe(6);
  });

  it('a page of metered subscriptions reads its meters once, then every usage Query: not one round trip per subscription per meter in sequence', async () => {
    const { customer, product, name } = await setting();
    await subscribe(product.id, customer.id);
    await subscribe(product.id, customer.id);
    await arrive(customer.id, name, [{ at: Date.now(), tokens: 1 }]);
    world.resetCount();
    const page = await listSubscriptions(`customer_id=${customer.id}`);
    expect(page.body.items).toHaveLength(3);
    for (const item of page.body.items) expect(item.meters).toHaveLength(2);
    // Auth, counts, the active segment, subscriptions, customers and products (5), the meters' batch,
    // then the usage Queries side by side (the three subscriptions of one customer share their
    // window's two reads; created across an hour's end, their windows differ: at most 6).
    expect(world.roundTripsOf('list-subscriptions')).toBeGreaterThanOrEqual(5 + 1 + 2);
    expect(world.roundTripsOf('list-subscriptions')).toBeLessThanOrEqual(5 + 1 + 6);
  });

  it('past 500 read units of usage: Get 503 and the portal’s Get 503, the lists 422 at limit, never a partial figure', async () => {
    const { customer, calls, subscription } = await setting();
    const now = Date.now();
    const hours = 4_500;
    await setPeriod(subscription.id, now - (hours + 2) * HOUR, now + 24 * HOUR);
    const id = customerMeterId(customer.id, calls.id);
    const items = Array.from({ length: hours }, (_, i) =>
      storedHourAggregate(
        { organization_id: world.demo.organization_id, customer_id: customer.id, meter_id: calls.id },
        {
          customer_meter_id: id,
          hour: new Date(now - (i + 1) * HOUR).toISOString().slice(0, 13),
          state: { func: 'count', count: 1 } as never,
          applied: { 'shardId-000000000000': '1'.padStart(40, '0') },
          definition_version: 1,
          version: 1,
          updated_at: new Date(now).toISOString(),
        },
      ),
    );
    await putItems(world.table, items);
    expect((await getSubscription(subscription.id)).status).toBe(503);
    const page = await listSubscriptions(`customer_id=${customer.id}&limit=5`);
    expect(page.status).toBe(422);
    expect(page.body.detail[0]).toMatchObject({ loc: ['query', 'limit'] });
    const session = (await createCustomerSession(world.admin, { customer })).token;
    const portalGet = await world.call('GET', `/v1/customer-portal/subscriptions/${subscription.id}`, {
      token: session,
    });
    expect(documentedReply('getCustomerSubscription', portalGet).status).toBe(503);
    const portalList = await world.call('GET', '/v1/customer-portal/subscriptions/', { token: session });
    expect(documentedReply('listCustomerSubscriptions', portalList).status).toBe(422);
    expect(portalList.body.detail[0].loc).toEqual(['query', 'limit']);
    // The writes read the meters before their transaction: the same 503, and nothing written.
    const before = await storedItem(subscription.id);
    const path = `/v1/subscriptions/${subscription.id}`;
    const portalPath = `/v1/customer-portal/subscriptions/${subscription.id}`;
    const writes = [
      await world
        .call('PATCH', path, { token: pat(), body: { cancel_at_period_end: true } })
        .then((r) => documentedReply('updateSubscription', r)),
      await world
        .call('DELETE', path, { token: pat() })
        .then((r) => documentedReply('revokeSubscription', r)),
      await world
        .call('DELETE', portalPath, { token: session })
        .then((r) => documentedReply('cancelCustomerSubscription', r)),
      await world
        .call('PATCH', portalPath, { token: session, body: { cancel_at_period_end: true } })
        .then((r) => documentedReply('updateCustomerSubscription', r)),
    ];
    expect(writes.map((w) => w.status)).toEqual([503, 503, 503, 503]);
    expect(await storedItem(subscription.id)).toEqual(before);
    expect(typesOf(await outboxOf(world.table, 'subscription', subscription.id))).toEqual([
      'subscription.created',
      'subscription.active',
      'subscription.updated',
    ]);
  });
});

describe('write answers and webhook payloads carry the meters Get Subscription answers after the write', () => {
  /** The events of the change made at `at` (the outbox items of the subscription stamped then). */
  const eventsAt = async (id: string, at: string) =>
    (await outboxOf(world.table, 'subscription', id)).filter((event) => event.timestamp === at);
  const metersOf = (events: Awaited<ReturnType<typeof eventsAt>>) =>
    events.map((event) => event.envelope.data.meters);

  /** A subscription of `setting()` with a period of ten days so far and usage in it. */
  async function withUsage() {
    const set = await setting();
    const now = Date.now();
    const start = now - 10 * 24 * HOUR;
    await setPeriod(set.subscription.id, start, now + 24 * HOUR);
    await arrive(set.customer.id, set.name, [
      { at: start - HOUR, tokens: 100 }, // before the period: not counted
      { at: start + HOUR, tokens: 3 },
      { at: start + 50 * HOUR, tokens: 4 },
      { at: now, tokens: 5 },
    ]);
    return set;
  }

  /**
   * The reads (GetItem, BatchGetItem, Query) a function's client sent since `reset`, by command: the
   * round-trip count would also hold the segment registry puts after a create (a fresh customer's,
   * a fresh product's shard), which depend on what was created before.
   */
  const readsOf = (functionName: string) => {
    const sent: string[] = [];
    world.depsFor(functionName).table.doc.middlewareStack.add(
      (next, context) => async (args) => {
        const command = String(context.commandName);
        if (/^(Get|BatchGet|Query)/.test(command)) sent.push(command);
        return next(args);
      },
      { step: 'initialize', name: `readsOf-${functionName}` },
    );
    return { sent, reset: () => sent.splice(0) };
  };
  let createReads: ReturnType<typeof readsOf>;
  beforeAll(() => {
    createReads = readsOf('create-subscription');
  });

  it('Create: the answer and its three events carry Get’s meters (the usage of the period’s first hour), read before the write: the meters’ batch and a usage Query per meter more; a free product’s create reads nothing more', async () => {
    const { customer, name, calls, tokens, product } = await unsubscribed();
    const arrived = Date.now();
    await arrive(customer.id, name, [
      { at: arrived, tokens: 7 },
      { at: arrived, tokens: 11 },
    ]);
    createReads.reset();
    const created = await subscribe(product.id, customer.id);
    // The token, the inputs' batch; the meters' batch, two usage Queries side by side.
    expect(createReads.sent).toEqual([
      'GetItemCommand',
      'BatchGetItemCommand',
      'BatchGetItemCommand',
      'QueryCommand',
      'QueryCommand',
    ]);
    const got = await getSubscription(created.id);
    expect(got.body.meters).toHaveLength(2);
    expect(created.meters).toEqual(got.body.meters);
    // Arrived in the hour the period starts in (unless an hour ended between): counted.
    if (new Date(arrived).toISOString().slice(0, 13) === created.current_period_start.slice(0, 13)) {
      expect(byMeter(created.meters as Shown[]).get(tokens.id)).toMatchObject({ consumed_units: 18 });
      expect(byMeter(created.meters as Shown[]).get(calls.id)).toMatchObject({ consumed_units: 2 });
    }
    const events = await outboxOf(world.table, 'subscription', created.id);
    expect(typesOf(events)).toEqual(['subscription.created', 'subscription.active', 'subscription.updated']);
    expect(metersOf(events)).toEqual([got.body.meters, got.body.meters, got.body.meters]);
    // A product without a metered price: `[]`, and not one read more than before meters existed.
    createReads.reset();
    const free = await world
      .call('POST', '/v1/subscriptions/', {
        token: pat(),
        body: { product_id: world.demo.free_product_id, customer_id: customer.id },
      })
      .then((r) => documentedReply('createSubscription', r));
    expect(free.status).toBe(201);
    expect(createReads.sent).toEqual(['GetItemCommand', 'BatchGetItemCommand']);
    expect(free.body.meters).toEqual([]);
    expect(metersOf(await outboxOf(world.table, 'subscription', free.body.id))).toEqual([[], [], []]);
  });

  it('Update (cancel, uncancel) and Revoke: each answer and its events carry Get’s meters after it (the period’s usage; the revoked one’s up to its end), read before the write: 4 + 1 + 2 round trips', async () => {
    const { calls, tokens, subscription } = await withUsage();
    const path = `/v1/subscriptions/${subscription.id}`;
    const patch = (body: unknown) =>
      world.call('PATCH', path, { token: pat(), body }).then((r) => documentedReply('updateSubscription', r));
    world.resetCount();
    const canceled = await patch({ cancel_at_period_end: true });
    expect(canceled.status).toBe(200);
    expect(world.roundTripsOf('update-subscription')).toBe(4 + 1 + 2);
    const afterCancel = await getSubscription(subscription.id);
    expect(byMeter(afterCancel.body.meters as Shown[]).get(calls.id)).toMatchObject({ consumed_units: 3 });
    expect(byMeter(afterCancel.body.meters as Shown[]).get(tokens.id)).toMatchObject({
      consumed_units: 12,
      amount: 24,
    });
    expect(canceled.body.meters).toEqual(afterCancel.body.meters);
    const cancelEvents = await eventsAt(subscription.id, canceled.body.modified_at);
    expect(typesOf(cancelEvents)).toEqual(['subscription.updated', 'subscription.canceled']);
    expect(metersOf(cancelEvents)).toEqual([afterCancel.body.meters, afterCancel.body.meters]);

    const uncanceled = await patch({ cancel_at_period_end: false });
    expect(uncanceled.status).toBe(200);
    const afterUncancel = await getSubscription(subscription.id);
    expect(uncanceled.body.meters).toEqual(afterUncancel.body.meters);
    const uncancelEvents = await eventsAt(subscription.id, uncanceled.body.modified_at);
    expect(typesOf(uncancelEvents)).toEqual(['subscription.updated', 'subscription.uncanceled']);
    expect(metersOf(uncancelEvents)).toEqual([afterUncancel.body.meters, afterUncancel.body.meters]);

    const revoked = await world
      .call('DELETE', path, { token: pat() })
      .then((r) => documentedReply('revokeSubscription', r));
    expect(revoked.status).toBe(200);
    const afterRevoke = await getSubscription(subscription.id);
    expect(afterRevoke.body.ended_at).not.toBeNull();
    expect(byMeter(afterRevoke.body.meters as Shown[]).get(calls.id)).toMatchObject({ consumed_units: 3 });
    expect(revoked.body.meters).toEqual(afterRevoke.body.meters);
    const revokeEvents = await eventsAt(subscription.id, revoked.body.modified_at);
    expect(typesOf(revokeEvents)).toContain('subscription.revoked');
    expect(metersOf(revokeEvents)).toEqual(revokeEvents.map(() => afterRevoke.body.meters));
  });

  it('the portal’s cancel and uncancel: the answer carries the portal Get’s meters, the events Get Subscription’s', async () => {
    const { customer, calls, subscription } = await withUsage();
    const session = (await createCustomerSession(world.admin, { customer })).token;
    const path = `/v1/customer-portal/subscriptions/${subscription.id}`;
    const portalGet = () =>
      world.call('GET', path, { token: session }).then((r) => documentedReply('getCustomerSubscription', r));
    const canceled = await world
      .call('DELETE', path, { token: session })
      .then((r) => documentedReply('cancelCustomerSubscription', r));
    expect(canceled.status).toBe(200);
    const afterCancel = await getSubscription(subscription.id);
    expect(byMeter(afterCancel.body.meters as Shown[]).get(calls.id)).toMatchObject({ consumed_units: 3 });
    expect(canceled.body.meters).toEqual((await portalGet()).body.meters);
    expect(canceled.body.meters).toEqual(portalView(afterCancel.body.meters));
    const cancelEvents = await eventsAt(subscription.id, canceled.body.modified_at);
    expect(typesOf(cancelEvents)).toEqual(['subscription.updated', 'subscription.canceled']);
    expect(metersOf(cancelEvents)).toEqual([afterCancel.body.meters, afterCancel.body.meters]);

    const uncanceled = await world
      .call('PATCH', path, { token: session, body: { cancel_at_period_end: false } })
      .then((r) => documentedReply('updateCustomerSubscription', r));
    expect(uncanceled.status).toBe(200);
    const afterUncancel = await getSubscription(subscription.id);
    expect(uncanceled.body.meters).toEqual((await portalGet()).body.meters);
    const uncancelEvents = await eventsAt(subscription.id, uncanceled.body.modified_at);
    expect(typesOf(uncancelEvents)).toEqual(['subscription.updated', 'subscription.uncanceled']);
    expect(metersOf(uncancelEvents)).toEqual([afterUncancel.body.meters, afterUncancel.body.meters]);
  });
});

describe('a long period from day aggregates', () => {
  /**
   * A count meter's customer meter with 700 hours from 2025-01-01T00 of about 5.7 KB each (50 stream
   * shards applied): about 4 MB, over 500 × 4 KB; and a subscription of that customer whose period
   * began 2025-01-01T05:30 and has not ended (about two years of hours: a yearly period's kind).
   */
  async function heavyPeriod() {
    const { customer, name, calls, subscription } = await setting();
    const id = customerMeterId(customer.id, calls.id);
    const owner = {
      organization_id: world.demo.organization_id,
      customer_id: customer.id,
      meter_id: calls.id,
    };
    const start = Date.parse('2025-01-01T00:00:00Z');
    const hourAt = (i: number) => new Date(start + i * HOUR).toISOString().slice(0, 13);
    const items = [
      storedCustomerMeter({ id, ...owner, created_at: '2024-12-31T00:00:00.000Z' }),
      ...heavyCountHours(owner, id, start),
    ];
    await putItems(world.table, items);
    await setPeriod(subscription.id, Date.parse('2025-01-01T05:30:00Z'), Date.now() + 24 * HOUR);
    const consumed = async () => {
      const reply = await getSubscription(subscription.id);
      expect(reply.status).toBe(200);
      return byMeter(reply.body.meters as Shown[]).get(calls.id)?.consumed_units;
    };
    /** A batch of one event for the customer now, rolling up at most `max` hours. */
    const batch = (max?: number) =>
      aggregateEvents(
        { table: world.admin.table, now: () => new Date(), ...(max ? { rollupMaxHours: max } : {}) },
        `seed-${randomUUID()}`,
        [
          {
            sequence: '1',
            event: {
              id: randomUUID(),
              organization_id: world.demo.organization_id,
              name,
              timestamp_us: Date.now() * 1000,
              external_id: null,
              customer_id: customer.id,
              external_customer_id: null,
              metadata: '{}',
              ingest_request: randomUUID(),
              ingested_at: new Date().toISOString(),
            },
          },
        ],
      );
    const day = async (d: string) =>
      (
        await world.table.doc.send(
          new GetCommand({ TableName: world.table.name, Key: { PK: `CMETER#${id}`, SK: `DAY#${d}` } }),
        )
      ).Item;
    return { id, owner, subscription, consumed, batch, day, hourAt };
  }

  it('a period longer than one request reads in hours: 503 until rolled up, then its exact usage from a day aggregate a day and the hours at its edges, a roll-up at a time', async () => {
    const { subscription, consumed, batch, day, hourAt } = await heavyPeriod();
    // 695 of the 700 hours are in the period (from its start's hour, T05).
    expect((await getSubscription(subscription.id)).status).toBe(503);
    await batch(400);
    // Through hour 400 (2025-01-17T16): days 01-01 to 01-16 whole, 01-17 not yet.
    expect(await day('2025-01-16')).toMatchObject({
      hours: 24,
      state: JSON.stringify({ func: 'count', count: 24 }),
    });
    expect(await day('2025-01-17')).toBeUndefined();
    expect(hourAt(400)).toBe('2025-01-17T16');
    // 300 heavy hours left in hours (1.7 MB) and 16 days: served, exact.
    expect(await consumed()).toBe(695 + 1);
    await batch(200);
    // The day `through` was in is read again from its first hour: its aggregate holds all 24.
    expect(await day('2025-01-17')).toMatchObject({
      hours: 24,
      state: JSON.stringify({ func: 'count', count: 24 }),
    });
    expect(await consumed()).toBe(695 + 2);
    await batch();
    // 700 hours: the last day, 2025-01-30, holds 4.
    expect(await day('2025-01-30')).toMatchObject({ hours: 4 });
    expect(await consumed()).toBe(695 + 3);
  });

  it('a roll-up written before day aggregates: its next roll-up starts them from the day its through is in, and a window before them reads those days in hours', async () => {
    const { id, owner, subscription, consumed, batch, day, hourAt } = await heavyPeriod();
    await world.table.doc.send(
      new PutCommand({
        TableName: world.table.name,
        Item: storedCustomerMeter({
          id,
          ...owner,
          created_at: '2024-12-31T00:00:00.000Z',
          rollup: {
            through: hourAt(400),
            state: { func: 'count', count: 400 },
            definition_version: 1,
            hours: 400,
            updated_at: new Date().toISOString(),
          },
        }),
      }),
    );
    await batch();
    expect(await day('2025-01-16')).toBeUndefined();
    expect(await day('2025-01-17')).toMatchObject({ hours: 24 });
    const read = await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: { PK: `CMETER#${id}`, SK: `CMETER#${id}` } }),
    );
    expect(read.Item?.rollup).toMatchObject({ days_from: '2025-01-17', hours: 700 });
    // A period from 2025-01-17: its days from their aggregates (hours 384 to 699, plus the batch's event).
    await setPeriod(subscription.id, Date.parse('2025-01-17T00:00:00Z'), Date.now() + 24 * HOUR);
    expect(await consumed()).toBe(316 + 1);
    // From 2025-01-01: the 384 hours before `days_from` are read as hours, the rest from days.
    await setPeriod(subscription.id, Date.parse('2025-01-01T00:00:00Z'), Date.now() + 24 * HOUR);
    expect(await consumed()).toBe(700 + 1);
  });
});

describe('a long period of a unique meter from day values', () => {
  /**
   * A `unique` meter's customer meter with 700 hours from 2025-01-01T00, each with the six long
   * recurring values and one of its own (4,900 value items, about 5 MB, over 500 × 4 KB), and a
   * subscription pricing it whose period began 2025-01-01T05:30 and has not ended.
   */
  async function heavyUniquePeriod() {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `unique+${randomUUID()}@example.com`,
    });
    const name = `users.${randomUUID()}`;
    const users = await meter(name, { func: 'unique', property: 'user' });
    const product = await world
      .call('POST', '/v1/products/', {
        token: pat(),
        body: {
          name: `Seats ${randomUUID()}`,
          recurring_interval: 'month',
          prices: [
            { amount_type: 'fixed', price_amount: 0 },
            { amount_type: 'metered_unit', unit_amount: '1', meter_id: users.id },
          ],
        },
      })
      .then((r) => documentedReply('createProduct', r));
    expect(product.status, JSON.stringify(product.body)).toBe(201);
    const subscription = await subscribe((product.body as { id: string }).id, customer.id);
    const id = customerMeterId(customer.id, users.id);
    const owner = {
      organization_id: world.demo.organization_id,
      customer_id: customer.id,
      meter_id: users.id,
    };
    const start = Date.parse('2025-01-01T00:00:00Z');
    const hourAt = (i: number) => new Date(start + i * HOUR).toISOString().slice(0, 13);
    await putItems(world.table, [
      storedCustomerMeter({ id, ...owner, created_at: '2024-12-31T00:00:00.000Z' }),
      ...heavyUniqueHours(owner, id, start),
    ]);
    await setPeriod(subscription.id, Date.parse('2025-01-01T05:30:00Z'), Date.now() + 24 * HOUR);
    const shown = () => getSubscription(subscription.id);
    const consumed = async () => {
      const reply = await shown();
      expect(reply.status).toBe(200);
      return byMeter(reply.body.meters as Shown[]).get(users.id)?.consumed_units;
    };
    /** A batch of one event for the customer now (value "now"), rolling up at most `max` value items. */
    const batch = (max?: number) =>
      aggregateEvents(
        { table: world.admin.table, now: () => new Date(), ...(max ? { rollupMaxHours: max } : {}) },
        `seed-${randomUUID()}`,
        [
          {
            sequence: '1',
            event: {
              id: randomUUID(),
              organization_id: world.demo.organization_id,
              name,
              timestamp_us: Date.now() * 1000,
              external_id: null,
              customer_id: customer.id,
              external_customer_id: null,
              metadata: JSON.stringify({ user: 'now' }),
              ingest_request: randomUUID(),
              ingested_at: new Date().toISOString(),
            },
          },
        ],
      );
    const dayValues = async (d: string) =>
      (
        await queryAll(world.table, {
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :day)',
          ExpressionAttributeValues: { ':pk': `CMETER#${id}`, ':day': `${DAY_VALUE_PREFIX}${d}#` },
          ConsistentRead: true,
        })
      ).length;
    const rollup = async () =>
      (
        await world.table.doc.send(
          new GetCommand({ TableName: world.table.name, Key: { PK: `CMETER#${id}`, SK: `CMETER#${id}` } }),
        )
      ).Item?.rollup;
    return { id, owner, subscription, shown, consumed, batch, dayValues, rollup, hourAt };
  }

  it('a period longer than one request reads in values by hour: 503 until rolled up, then its exact distinct count from day values (one item per value a day) and the values of its edges, a roll-up at a time', async () => {
    const { shown, consumed, batch, dayValues, rollup, hourAt } = await heavyUniquePeriod();
    // 695 of the 700 hours are in the period (from its start's hour, T05): 6 + 695 distinct.
    expect((await shown()).status).toBe(503);
    // At most 400 value items: through hour 57 (2025-01-03T09); days 01-01 and 01-02 whole.
    await batch(400);
    expect(await rollup()).toMatchObject({ through: hourAt(57), days_from: '' });
    expect(await dayValues('2025-01-02')).toBe(6 + 24);
    // 4,200 value items of the hours from 57 still by hour: over the bound.
    expect((await shown()).status).toBe(503);
    // 3,000 more: through hour 485 (2025-01-21T05), that day's first five hours' values put.
    await batch(3000);
    expect(await rollup()).toMatchObject({ through: hourAt(485) });
    expect(hourAt(485)).toBe('2025-01-21T05');
    expect(await dayValues('2025-01-21')).toBe(6 + 5);
    expect(await consumed()).toBe(6 + 695 + 1);
    await batch();
    // The rest: 01-21's other hours added to its values, 01-30 holds its 4 hours.
    expect(await dayValues('2025-01-21')).toBe(6 + 24);
    expect(await dayValues('2025-01-30')).toBe(6 + 4);
    expect(await consumed()).toBe(6 + 695 + 1);
  });

  it('a unique roll-up written before day values: its next roll-up puts them from the first day it reads whole, and a period before them reads those days by hour', async () => {
    const { id, owner, subscription, consumed, batch, dayValues, rollup, hourAt } = await heavyUniquePeriod();
    // Rolled up through hour 400 (2025-01-17T16) by a step that wrote only seen values.
    await putItems(world.table, [
      storedCustomerMeter({
        id,
        ...owner,
        created_at: '2024-12-31T00:00:00.000Z',
        rollup: {
          through: hourAt(400),
          state: { func: 'unique', values: [] },
          definition_version: 1,
          hours: 400,
          updated_at: new Date().toISOString(),
        },
      }),
      ...[...RECURRING_VALUES, ...Array.from({ length: 400 }, (_, i) => JSON.stringify(`u${i}`))].map(
        (value) => ({
          ...seenKey(id, value),
          entity: 'customer_meter_seen',
          ...owner,
          value,
          definition_version: 1,
        }),
      ),
    ]);
    // Two steps (at most 2,000 value items each).
    await batch();
    await batch();
    // From 2025-01-10: 01-10 to 01-17 by hour (192 hours of values), the rest from day values.
    await setPeriod(subscription.id, Date.parse('2025-01-10T00:00:00Z'), Date.now() + 24 * HOUR);
    expect(await consumed()).toBe(6 + (700 - 216) + 1);
    // From 2025-01-18: day values only, and the batch's hour.
    await setPeriod(subscription.id, Date.parse('2025-01-18T00:00:00Z'), Date.now() + 24 * HOUR);
    expect(await consumed()).toBe(6 + (700 - 408) + 1);
    expect(await dayValues('2025-01-17')).toBe(0);
    expect(await dayValues('2025-01-18')).toBe(6 + 24);
    expect(await rollup()).toMatchObject({ days_from: '2025-01-18', hours: 700 });
  });
});
