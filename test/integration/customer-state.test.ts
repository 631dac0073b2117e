/**
 * Get Customer State (by id and by external id) against DynamoDB Local under the functions'
 * deployed policies: the customer's fields as Get Customer answers them, only its active (and
 * trialing) subscriptions, its customer meters folded from ingested events exactly as Get Customer
 * Meter folds them (archived meters' too), tenant safety, deleted customers, round trips, and the
 * bounds (more than 100 active subscriptions, more than 200 meters in the organization, more than
 * 500 read units of usage: a 422 at the path parameter, never a partial state).
 */
import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
  createWebhookEndpoint,
} from '#scripts/admin/commands.ts';
import { customerMeterId, storedCustomerMeter, storedHourAggregate } from '#shared/data/customer-meters.ts';
import type { SubscriptionRecord } from '#shared/data/records.ts';
import { getSubscription, insertSubscription } from '#shared/data/subscriptions.ts';
import { keys } from '#shared/data/table.ts';
import { getUsageEvent, usageEventId } from '#shared/data/usage-events.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { MAX_STATE_METERS, MAX_STATE_SUBSCRIPTIONS } from '#shared/services/customer-state.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { seedMeter } from '../cards/get-meter.ts';
import { documentedReply } from '../support/contract.ts';
import { heavyCountHours } from '../support/heavy-hours.ts';
import { outboxOf } from '../support/outbox.ts';
import { putItems } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('customer-state');
});
afterAll(() => world?.drop());

interface StateBody {
  id: string;
  external_id: string | null;
  active_subscriptions: {
    id: string;
    created_at: string;
    status: string;
    cancel_at_period_end: boolean;
    meters: {
      id: string;
      created_at: string;
      modified_at: string | null;
      meter_id: string;
      consumed_units: number;
      credited_units: number;
      amount: number;
    }[];
  }[];
  granted_benefits: unknown[];
  active_meters: {
    id: string;
    created_at: string;
    meter_id: string;
    consumed_units: number;
    credited_units: number;
    balance: number;
  }[];
}

const byId = (id: string, token: string) =>
  world
    .call('GET', `/v1/customers/${id}/state`, { token })
    .then((r) => documentedReply('getCustomerState', r));
const byExternal = (externalId: string, token: string) =>
  world
    .call('GET', `/v1/customers/external/${encodeURIComponent(externalId)}/state`, { token })
    .then((r) => documentedReply('getCustomerStateExternal', r));
const state = (reply: Reply) => reply.body as StateBody;
const oldestFirst = (a: { created_at: string; id: string }, b: { created_at: string; id: string }) =>
  Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** An organization of its own (no other meter counts its events), its member's PAT with every scope, a free product. */
async function tenant() {
  const organization = await createOrganization(world.admin, { name: `State ${randomUUID().slice(0, 8)}` });
  const user = await createUser(world.admin, { email: `state+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, user.id);
  const { token } = await createPersonalAccessToken(world.admin, {
    userId: user.id,
    scope: ALL_SCOPES.join(' '),
  });
  const product = await createProduct(world.admin, {
    organizationId: organization.id,
    name: 'Free plan',
    recurringInterval: 'month',
    priceAmount: 0,
    currency: 'usd',
  });
  const call = (method: string, url: string, body?: unknown) =>
    world.call(method, url, { token, ...(body === undefined ? {} : { body }) });
  const customer = async (externalId = `ext-${randomUUID()}`) => {
    const reply = await call('POST', '/v1/customers/', {
      email: `${externalId}@x.example`,
      external_id: externalId,
    });
    expect(reply.status).toBe(201);
    return reply.body as { id: string; external_id: string };
  };
  const subscribe = async (customerId: string, productId = product.id) => {
    const reply = await call('POST', '/v1/subscriptions/', {
      product_id: productId,
      customer_id: customerId,
    });
    expect(reply.status).toBe(201);
    return reply.body.id as string;
  };
  const meter = async (name: string, aggregation: unknown) => {
    const reply = await call('POST', '/v1/meters/', {
      name: `Meter ${name}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation,
    });
    expect(reply.status).toBe(201);
    return reply.body.id as string;
  };
  /** Ingests events through the API, then folds them as the aggregator's stream batch would. */
  const ingest = async (events: Record<string, unknown>[]) => {
    const withIds = events.map((event) => ({ ...event, external_id: `e-${randomUUID()}` }));
    const reply = await call('POST', '/v1/events/ingest', { events: withIds });
    expect(reply.status).toBe(200);
    const stored = await Promise.all(
      withIds.map((event) => getUsageEvent(world.table, usageEventId(organization.id, event.external_id))),
    );
    await aggregateEvents(
      world.depsFor('meter-aggregator'),
      `shard-${randomUUID()}`,
      stored.map((event, i) => {
        if (!event) throw new Error('an ingested event is missing');
        return { sequence: String(i + 1), event };
      }),
    );
  };
  return { organizationId: organization.id, token, product, call, customer, subscribe, meter, ingest };
}

/** Writes items as the operator would (batches of 25). */
const putAll = (items: Record<string, unknown>[]): Promise<void> => putItems(world.table, items);

/** Copies of a stored subscription with other ids and a given status, inserted as Create Subscription does. */
async function copies(of: string, status: string, count: number): Promise<string[]> {
  const original = await getSubscription(world.table, of);
  if (!original) throw new Error(`no subscription ${of}`);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const { change_id: _change, ...rest } = original;
    await insertSubscription(world.table, { ...rest, id, status: status as SubscriptionRecord['status'] });
    ids.push(id);
  }
  return ids;
}

describe('Get Customer State', () => {
  it('the customer as Get Customer answers it, its active subscriptions only, its meters folded from ingested events; 10 round trips', async () => {
    const t = await tenant();
    const customer = await t.customer();
    const [kept, canceling, revoked] = [
      await t.subscribe(customer.id),
      await t.subscribe(customer.id),
      await t.subscribe(customer.id),
    ];
    expect(
      (await t.call('PATCH', `/v1/subscriptions/${canceling}`, { cancel_at_period_end: true })).status,
    ).toBe(200);
    expect((await t.call('DELETE', `/v1/subscriptions/${revoked}`)).status).toBe(200);
    const [calls, tokens] = [`calls.${randomUUID()}`, `tokens.${randomUUID()}`];
    const countMeter = await t.meter(calls, { func: 'count' });
    const sumMeter = await t.meter(tokens, { func: 'sum', property: 'n' });
    await t.ingest([
      { name: calls, customer_id: customer.id },
      { name: calls, external_customer_id: customer.external_id },
      { name: calls, customer_id: customer.id },
      { name: tokens, customer_id: customer.id, metadata: { n: 2.5 } },
      { name: tokens, external_customer_id: customer.external_id, metadata: { n: 4 } },
    ]);

    world.resetCount();
    const reply = await byId(customer.id, t.token);
    expect(reply.status).toBe(200);
    // The token, the customer, the meters, the subscription segments, the active segment, the
    // active subscriptions by key (slim entries), the customer meters by key (one batch), their
    // products by key (one batch, beside it), one usage Query per customer meter (the free
    // product has no metered price: no subscription usage is read).
    expect(world.roundTrips()).toBe(10);
    const body = state(reply);
    const { active_subscriptions, granted_benefits, active_meters, ...fields } = body;
    expect(fields).toEqual((await t.call('GET', `/v1/customers/${customer.id}`)).body);
    // Oldest first (created_at, then id); the revoked one left out.
    expect(active_subscriptions.map((s) => s.id).sort()).toEqual([kept, canceling].sort());
    expect(active_subscriptions).toEqual([...active_subscriptions].sort(oldestFirst));
    expect(
      new Map(active_subscriptions.map((s) => [s.id, [s.status, s.cancel_at_period_end, s.meters]])),
    ).toEqual(
      new Map([
        [kept, ['active', false, []]],
        [canceling, ['active', true, []]],
      ]),
    );
    expect(granted_benefits).toEqual([]);
    // Oldest first, then by id: both customer meters may be created in one millisecond.
    expect(active_meters).toEqual([...active_meters].sort(oldestFirst));
    expect(
      [...active_meters].sort((a, b) => (a.meter_id === countMeter ? -1 : b.meter_id === countMeter ? 1 : 0)),
    ).toEqual([
      {
        id: customerMeterId(customer.id, countMeter),
        created_at: expect.any(String),
        modified_at: null,
        meter_id: countMeter,
        consumed_units: 3,
        credited_units: 0,
        balance: -3,
      },
      {
        id: customerMeterId(customer.id, sumMeter),
        created_at: expect.any(String),
        modified_at: null,
        meter_id: sumMeter,
        consumed_units: 6.5,
        credited_units: 0,
        balance: -6.5,
      },
    ]);
    // The same totals as Get Customer Meter answers.
    for (const meter of active_meters) {
      const one = await t.call('GET', `/v1/customer-meters/${meter.id}`);
      expect(one.body).toMatchObject({ consumed_units: meter.consumed_units, created_at: meter.created_at });
    }
    // By external id: the same state.
    world.resetCount();
    const external = await byExternal(customer.external_id, t.token);
    expect(external.status).toBe(200);
    // One more: the customer is read by key after its external-id range (slim list entries).
    expect(world.roundTrips()).toBe(11);
    expect(external.body).toEqual(body);
  });

  it('a customer with nothing: empty lists in 4 round trips; trialing counts as active, past_due and the other statuses do not', async () => {
    const t = await tenant();
    const customer = await t.customer();
    world.resetCount();
    const empty = await byId(customer.id, t.token);
    expect(empty.status).toBe(200);
    // The token, the customer, the meters (none), the subscription segments (none).
    expect(world.roundTrips()).toBe(4);
    expect(empty.body).toMatchObject({ active_subscriptions: [], granted_benefits: [], active_meters: [] });

    const first = await t.subscribe(customer.id);
    const [trialing] = await copies(first, 'trialing', 1);
    for (const status of ['past_due', 'incomplete', 'incomplete_expired', 'unpaid', 'canceled']) {
      await copies(first, status, 1);
    }
    const reply = await byId(customer.id, t.token);
    // Copies keep the original's created_at: ordered by id among themselves.
    const expected: [string, string][] = [
      [first, 'active'],
      [trialing as string, 'trialing'],
    ];
    expect(state(reply).active_subscriptions.map((s) => [s.id, s.status])).toEqual(
      expected.sort((a, b) => (a[0] < b[0] ? -1 : 1)),
    );
  });

  it('an archived meter’s customer meter stays in the state (as the hosted service), though List Customer Meters leaves it out', async () => {
    const t = await tenant();
    const customer = await t.customer();
    const name = `archived.${randomUUID()}`;
    const meterId = await t.meter(name, { func: 'count' });
    await t.ingest([{ name, customer_id: customer.id }]);
    expect((await t.call('PATCH', `/v1/meters/${meterId}`, { is_archived: true })).status).toBe(200);
    expect(state(await byId(customer.id, t.token)).active_meters).toMatchObject([
      { meter_id: meterId, consumed_units: 1 },
    ]);
    const listed = await t.call('GET', `/v1/customer-meters/?customer_id=${customer.id}`);
    expect(listed.body.items).toEqual([]);
  });

  it('another organization’s customer, a deleted one, an unknown one: the same 404, by id and by external id; a malformed id 422', async () => {
    const t = await tenant();
    const other = await tenant();
    const theirs = await other.customer();
    const gone = await t.customer();
    expect((await t.call('DELETE', `/v1/customers/${gone.id}`)).status).toBe(204);
    for (const reply of [
      await byId(theirs.id, t.token),
      await byExternal(theirs.external_id, t.token),
      await byId(gone.id, t.token),
      await byExternal(gone.external_id, t.token),
      await byId(randomUUID(), t.token),
      await byExternal(randomUUID(), t.token),
    ]) {
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    }
    expect((await byId(theirs.id, other.token)).status).toBe(200);
    expect((await byId('not-an-id', t.token)).status).toBe(422);
  });

  it('customers:read or customers:write is enough; another scope is a 403', async () => {
    const t = await tenant();
    const customer = await t.customer();
    const member = await createUser(world.admin, { email: `scopes+${randomUUID()}@x.example` });
    await addMember(world.admin, t.organizationId, member.id);
    for (const [scope, status] of [
      ['customers:read', 200],
      ['customers:write', 200],
      ['subscriptions:read customer_meters:read', 403],
    ] as const) {
      const { token } = await createPersonalAccessToken(world.admin, { userId: member.id, scope });
      expect((await byId(customer.id, token)).status, scope).toBe(status);
      expect((await byExternal(customer.external_id, token)).status, scope).toBe(status);
    }
  });
});

/** A subscription's period moved (operator access), as the boundary tests of subscription-meters.test.ts. */
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

/** `count` hour aggregates of one event each, the hours before `before` (a stream shard's, ≈ 0.5 KB each). */
const countHours = (
  owner: { organization_id: string; customer_id: string; meter_id: string },
  id: string,
  before: number,
  count: number,
) =>
  Array.from({ length: count }, (_, i) =>
    storedHourAggregate(owner, {
      customer_meter_id: id,
      hour: new Date(before - (i + 1) * HOUR).toISOString().slice(0, 13),
      state: { func: 'count', count: 1 },
      applied: { 'shardId-000000000000': '1'.padStart(40, '0') },
      definition_version: 1,
      version: 1,
      updated_at: new Date().toISOString(),
    }),
  );

const HOUR = 3_600_000;

describe("the active subscriptions' meters: Get Subscription's usage of the current period", () => {
  /** A tenant with a calls (count) and a tokens (sum of `n`) meter, and a product pricing both (tokens capped at 100 cents). */
  async function metered() {
    const t = await tenant();
    const [calls, tokens] = [`calls.${randomUUID()}`, `tokens.${randomUUID()}`];
    const callsMeter = await t.meter(calls, { func: 'count' });
    const tokensMeter = await t.meter(tokens, { func: 'sum', property: 'n' });
    const product = await t.call('POST', '/v1/products/', {
      name: `Usage ${randomUUID()}`,
      recurring_interval: 'month',
      prices: [
        { amount_type: 'fixed', price_amount: 0 },
        { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: callsMeter },
        { amount_type: 'metered_unit', unit_amount: '2', cap_amount: 100, meter_id: tokensMeter },
      ],
    });
    expect(product.status, JSON.stringify(product.body)).toBe(201);
    return { t, calls, tokens, callsMeter, tokensMeter, productId: product.body.id as string };
  }
  const withoutMeter = <M extends { meter: unknown }>(meters: M[]) =>
    meters.map(({ meter: _, ...figures }) => figures);
  const byMeterId = <M extends { meter_id: string }>(meters: M[]) =>
    [...meters].sort((a, b) => (a.meter_id < b.meter_id ? -1 : 1));

  it('consumed units and amounts of the period (count, a capped sum), equal to Get Subscription’s, by id and by external id, and in the customer.state_changed payload; the meters are not read again', async () => {
    const { t, calls, tokens, callsMeter, tokensMeter, productId } = await metered();
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: t.organizationId,
      url: `https://hooks.example/state/${randomUUID()}`,
      events: ['customer.state_changed'],
    });
    expect(endpoint.events).toEqual(['customer.state_changed']);
    const customer = await t.customer();
    const free = await t.subscribe(customer.id);
    const usage = await t.subscribe(customer.id, productId);
    // Four calls in an hour three days before the period (it started at creation): the customer
    // meter's all-time total counts them, the subscription's period does not.
    const id = customerMeterId(customer.id, callsMeter);
    const owner = { organization_id: t.organizationId, customer_id: customer.id, meter_id: callsMeter };
    await putAll(countHours(owner, id, Date.now() - 72 * HOUR, 4));
    // Then three calls and 60 tokens in the period, folded by the aggregator (under its policy),
    // which writes the customer's state_changed item (its organization listens).
    await t.ingest([
      { name: calls, customer_id: customer.id },
      { name: calls, external_customer_id: customer.external_id },
      { name: calls, customer_id: customer.id },
      { name: tokens, customer_id: customer.id, metadata: { n: 25 } },
      { name: tokens, external_customer_id: customer.external_id, metadata: { n: 35 } },
    ]);

    world.resetCount();
    const reply = await byId(customer.id, t.token);
    expect(reply.status).toBe(200);
    // As the test above (10), and one usage Query per metered price's meter in the period: the
    // meters and customer meters the state read already serve them (Get Subscription reads both again).
    expect(world.roundTrips()).toBe(12);
    const body = state(reply);
    const shown = new Map(body.active_subscriptions.map((s) => [s.id, s.meters]));
    expect(shown.get(free)).toEqual([]);
    const got = await t.call('GET', `/v1/subscriptions/${usage}`);
    expect(got.status).toBe(200);
    expect(byMeterId(shown.get(usage) ?? [])).toEqual(
      byMeterId([
        {
          id: expect.any(String),
          created_at: got.body.created_at,
          modified_at: null,
          meter_id: callsMeter,
          consumed_units: 3,
          credited_units: 0,
          // 3 × 0.5 cents = 1.5, rounded half away from zero.
          amount: 2,
        },
        {
          id: expect.any(String),
          created_at: got.body.created_at,
          modified_at: null,
          meter_id: tokensMeter,
          consumed_units: 60,
          credited_units: 0,
          // 60 × 2 cents = 120, capped at 100.
          amount: 100,
        },
      ]),
    );
    // Exactly what Get Subscription answers, less the meter each embeds (ids included).
    expect(byMeterId(shown.get(usage) ?? [])).toEqual(
      withoutMeter(byMeterId(got.body.meters as { meter: unknown; meter_id: string }[])),
    );
    // The customer meter over all time: the four earlier calls too.
    expect(body.active_meters.find((m) => m.meter_id === callsMeter)?.consumed_units).toBe(7);
    const external = await byExternal(customer.external_id, t.token);
    expect(external.status).toBe(200);
    expect(external.body).toEqual(body);

    // The aggregator's customer.state_changed: the same state, meters included.
    const sent = (await outboxOf(world.table, 'customer', customer.id)).filter(
      (e) => e.type === 'customer.state_changed',
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]?.envelope.data).toEqual(body);
  });

  it('a metered subscription with no usage yet: one meter per metered price, at zero', async () => {
    const { t, callsMeter, tokensMeter, productId } = await metered();
    const customer = await t.customer();
    const usage = await t.subscribe(customer.id, productId);
    const reply = await byId(customer.id, t.token);
    expect(reply.status).toBe(200);
    const [only] = state(reply).active_subscriptions;
    expect(only?.id).toBe(usage);
    const figures = new Map(
      (only?.meters ?? []).map((m) => [m.meter_id, [m.consumed_units, m.credited_units, m.amount]]),
    );
    expect(figures).toEqual(
      new Map([
        [callsMeter, [0, 0, 0]],
        [tokensMeter, [0, 0, 0]],
      ]),
    );
    expect(state(reply).active_meters).toEqual([]);
  });

  it('the period’s usage is read within the state’s 500 read units: a customer meter that Get Subscription and Get Customer Meter each read alone, read twice by the state (all time and the period), is a 422, never a state without it', async () => {
    const { t, callsMeter, productId } = await metered();
    const customer = await t.customer();
    const usage = await t.subscribe(customer.id, productId);
    const now = Date.now();
    const hours = 2_400;
    await setPeriod(usage, now - (hours + 2) * HOUR, now + 24 * HOUR);
    const id = customerMeterId(customer.id, callsMeter);
    const owner = { organization_id: t.organizationId, customer_id: customer.id, meter_id: callsMeter };
    // About 2,400 × 0.5 KB ≈ 300 read units: one read fits 500, two do not.
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: new Date(now).toISOString() }),
      ...countHours(owner, id, now, hours),
    ]);
    const alone = await t.call('GET', `/v1/subscriptions/${usage}`);
    expect(alone.status).toBe(200);
    expect(
      alone.body.meters.find((m: { meter_id: string }) => m.meter_id === callsMeter)?.consumed_units,
    ).toBe(hours);
    const meter = await t.call('GET', `/v1/customer-meters/${id}`);
    expect(meter.status).toBe(200);
    expect(meter.body.consumed_units).toBe(hours);
    refusedAt(await byId(customer.id, t.token), 'id');
    refusedAt(await byExternal(customer.external_id, t.token), 'external_id');
  });
});

const refusedAt = (reply: Reply, parameter: string) => {
  expect(reply.status).toBe(422);
  expect(reply.body).toMatchObject({
    error: 'PolarRequestValidationError',
    detail: [{ loc: ['path', parameter], type: 'value_error' }],
  });
};

describe('the bounds: an exact state or a 422 at the path parameter', () => {
  it(`${MAX_STATE_SUBSCRIPTIONS} active subscriptions are served; one more is refused`, async () => {
    const t = await tenant();
    const customer = await t.customer();
    const first = await t.subscribe(customer.id);
    await copies(first, 'active', MAX_STATE_SUBSCRIPTIONS - 1);
    const served = await byId(customer.id, t.token);
    expect(served.status).toBe(200);
    expect(state(served).active_subscriptions).toHaveLength(MAX_STATE_SUBSCRIPTIONS);
    await copies(first, 'active', 1);
    refusedAt(await byId(customer.id, t.token), 'id');
    refusedAt(await byExternal(customer.external_id, t.token), 'external_id');
  });

  it(`an organization with more than ${MAX_STATE_METERS} meters: refused`, async () => {
    const t = await tenant();
    const customer = await t.customer();
    for (let i = 0; i < MAX_STATE_METERS; i++) await seedMeter(world, t.organizationId);
    expect((await byId(customer.id, t.token)).status).toBe(200);
    await seedMeter(world, t.organizationId);
    refusedAt(await byId(customer.id, t.token), 'id');
  });

  it('a customer meter with more stored hours than 500 read units: refused, as Get Customer Meter refuses it', async () => {
    const t = await tenant();
    const customer = await t.customer();
    const meterId = await seedMeter(world, t.organizationId);
    const id = customerMeterId(customer.id, meterId);
    const owner = { organization_id: t.organizationId, customer_id: customer.id, meter_id: meterId };
    // 700 hours of about 3.5 KB each (many stream shards applied): about 2.4 MB, over 500 × 4 KB.
    const start = Date.parse('2025-01-01T00:00:00Z');
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: new Date().toISOString() }),
      ...heavyCountHours(owner, id, start),
    ]);
    refusedAt(await byId(customer.id, t.token), 'id');
    refusedAt(await byExternal(customer.external_id, t.token), 'external_id');
    expect((await t.call('GET', `/v1/customer-meters/${id}`)).status).toBe(503);
  });
});
