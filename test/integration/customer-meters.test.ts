/**
 * Get and List Customer Meters against DynamoDB Local under the functions' deployed policies: the
 * totals the aggregator's hours fold to, the filters (by key and from the list), archived meters,
 * tenant safety, the sortings served and refused, and the read bound (a 503 for one customer meter,
 * a 422 at `limit` for a page, a 422 for a list too long to read without a customer filter). The
 * totals' exactness against a plain fold of the distinct events is meter-exactness.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import {
  CLOSED_AFTER_HOURS,
  customerMeterId,
  customerMeterRecord,
  hourOf,
  readHours,
  storedCustomerMeter,
  storedHourAggregate,
} from '#shared/data/customer-meters.ts';
import { keys } from '#shared/data/table.ts';
import { MAX_CUSTOMER_METERS, MAX_NAMED_CUSTOMERS } from '#shared/services/customer-meters.ts';
import {
  type AggregatorDependencies,
  aggregateEvents,
  DefinitionChanged,
} from '#shared/services/meter-aggregation.ts';
import { seedCustomerMeter } from '../cards/get-customer-meter.ts';
import { seedMeter } from '../cards/get-meter.ts';
import { documentedReply } from '../support/contract.ts';
import { heavyCountHours, heavyUniqueHours } from '../support/heavy-hours.ts';
import { putItems } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('customer-meters');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const get = (id: string, token = pat()) =>
  world
    .call('GET', `/v1/customer-meters/${id}`, { token })
    .then((r) => documentedReply('getCustomerMeter', r));
const list = (query: string, token = pat()) =>
  world
    .call('GET', `/v1/customer-meters/?${query}`, { token })
    .then((r) => documentedReply('listCustomerMeters', r));
const ids = (reply: { body: unknown }) => (reply.body as { items: { id: string }[] }).items.map((i) => i.id);

/** Writes items as the operator would (batches of 25). */
const putAll = (items: Record<string, unknown>[]): Promise<void> => putItems(world.table, items);

describe('Get Customer Meter', () => {
  it('answers the totals of the events the aggregator folded, with its customer and meter', async () => {
    const id = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id, 3);
    const reply = await get(id);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id,
      customer_id: world.demo.customer_id,
      consumed_units: 3,
      credited_units: 0,
      balance: -3,
      modified_at: null,
      customer: { id: world.demo.customer_id },
    });
    const body = reply.body as { meter_id: string; meter: { id: string } };
    expect(body.meter.id).toBe(body.meter_id);
    expect(id).toBe(customerMeterId(world.demo.customer_id, body.meter_id));
  });

  it('another organization’s customer meter, an unknown id: the same 404; a malformed id: 422', async () => {
    const theirs = await seedCustomerMeter(
      world,
      world.demo.other_organization.organization_id,
      world.demo.other_organization.customer_id,
    );
    expect((await get(theirs)).status).toBe(404);
    expect((await get(randomUUID())).status).toBe(404);
    expect((await get(theirs, world.demo.other_organization.personal_access_token)).status).toBe(200);
    expect((await get('not-an-id')).status).toBe(422);
  });
});

describe('List Customer Meters', () => {
  it('by customer id or external id with meter_id: exactly that customer meter; another organization’s ids contribute nothing', async () => {
    const id = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id, 2);
    const meterId = ((await get(id)).body as { meter_id: string }).meter_id;
    const byId = await list(`customer_id=${world.demo.customer_id}&meter_id=${meterId}`);
    expect(byId.status).toBe(200);
    expect(ids(byId)).toEqual([id]);
    expect(byId.body).toMatchObject({
      items: [{ consumed_units: 2, balance: -2 }],
      pagination: { total_count: 1, max_page: 1 },
    });
    const byExternal = await list(
      `external_customer_id=${world.demo.customer_external_id}&meter_id=${meterId}`,
    );
    expect(ids(byExternal)).toEqual([id]);
    // The other organization's customer, its organization: nothing, as an unknown id.
    const other = world.demo.other_organization;
    await seedCustomerMeter(world, other.organization_id, other.customer_id);
    for (const query of [
      `customer_id=${other.customer_id}`,
      `customer_id=${randomUUID()}`,
      `organization_id=${other.organization_id}`,
      `organization_id=${other.organization_id}&customer_id=${other.customer_id}`,
    ]) {
      const reply = await list(query);
      expect(reply.status, query).toBe(200);
      expect(reply.body, query).toMatchObject({ items: [], pagination: { total_count: 0 } });
    }
  });

  it('the whole list (no filter) walked a page at a time: every customer meter once, as many as total_count', async () => {
    const mine = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const first = await list('limit=1');
    const total = (first.body as { pagination: { total_count: number } }).pagination.total_count;
    expect(total).toBeGreaterThan(0);
    const seen: string[] = [];
    for (let page = 1; page <= total; page++) seen.push(...ids(await list(`limit=1&page=${page}`)));
    expect(new Set(seen).size).toBe(total);
    expect(seen).toContain(mine);
    // The default order (-modified_at, null everywhere) falls to the tie-break: newest first.
    const sorted = await list('limit=100');
    const created = (sorted.body as { items: { created_at: string }[] }).items.map((i) => i.created_at);
    expect(created).toEqual([...created].sort().reverse());
  });

  it('an archived meter’s customer meters are left out unless meter_id names it', async () => {
    const id = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const meterId = ((await get(id)).body as { meter_id: string }).meter_id;
    expect(ids(await list(`customer_id=${world.demo.customer_id}&limit=100`))).toContain(id);
    const archived = await world.call('PATCH', `/v1/meters/${meterId}`, {
      token: pat(),
      body: { is_archived: true },
    });
    expect(archived.status).toBe(200);
    expect(ids(await list(`customer_id=${world.demo.customer_id}&limit=100`))).not.toContain(id);
    expect(ids(await list('limit=100'))).not.toContain(id);
    expect(ids(await list(`meter_id=${meterId}`))).toEqual([id]);
    // Still readable by id, its totals intact.
    expect((await get(id)).body).toMatchObject({ consumed_units: 3 });
  });

  it('sortings: those served order the page; those that would fold every total are a 422 at sorting', async () => {
    const byMeter = await list('sorting=meter_id&limit=100');
    expect(byMeter.status).toBe(200);
    const meterIds = (byMeter.body as { items: { meter_id: string }[] }).items.map((i) => i.meter_id);
    expect(meterIds).toEqual([...meterIds].sort());
    expect((await list('sorting=-meter_name&sorting=created_at')).status).toBe(200);
    for (const sorting of ['consumed_units', '-balance', 'credited_units', 'customer_name']) {
      const refused = await list(`sorting=${sorting}`);
      expect(refused.status, sorting).toBe(422);
      expect(refused.body, sorting).toMatchObject({
        error: 'PolarRequestValidationError',
        detail: [{ loc: ['query', 'sorting'] }],
      });
    }
    expect((await list('sorting=nonsense')).status).toBe(422);
  });

  it(`more than ${MAX_NAMED_CUSTOMERS} customers named: a 422 at customer_id, before any of them is read`, async () => {
    const many = Array.from({ length: MAX_NAMED_CUSTOMERS + 1 }, () => `customer_id=${randomUUID()}`);
    const refused = await list(many.join('&'));
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ detail: [{ loc: ['query', 'customer_id'] }] });
    expect((await list(many.slice(1).join('&'))).status).toBe(200);
  });
});

/** Events of a customer folded by the real aggregator, one stream batch, all arrived now. */
let sequence = 0;
function aggregateBatch(
  customerId: string,
  events: { name: string; metadata: Record<string, unknown> }[],
  deps: Partial<AggregatorDependencies> = {},
) {
  const at = new Date().toISOString();
  return aggregateEvents(
    { table: world.admin.table, now: () => new Date(), ...deps },
    'shardId-customer-meters',
    events.map((e) => ({
      sequence: String(++sequence),
      event: {
        id: randomUUID(),
        organization_id: world.demo.organization_id,
        name: e.name,
        timestamp_us: Date.parse(at) * 1000,
        external_id: null,
        customer_id: customerId,
        external_customer_id: null,
        metadata: JSON.stringify(e.metadata),
        ingest_request: randomUUID(),
        ingested_at: at,
      },
    })),
  );
}

describe('a meter redefined (filter or aggregation changed before it is billed)', () => {
  /** A meter made through the API, and a customer of its own. */
  async function meterAndCustomer(body: Record<string, unknown>) {
    const created = await world.call('POST', '/v1/meters/', {
      token: pat(),
      body: { name: `Redefined ${randomUUID().slice(0, 8)}`, ...body },
    });
    expect(created.status).toBe(201);
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `redefined-${randomUUID().slice(0, 8)}@x.example`,
    });
    const meterId = (created.body as { id: string }).id;
    return { meterId, customerId: customer.id, id: customerMeterId(customer.id, meterId) };
  }
  const aggregate = (customerId: string, events: { name: string; metadata: Record<string, unknown> }[]) =>
    aggregateBatch(customerId, events);
  const patch = (meterId: string, body: Record<string, unknown>) =>
    world.call('PATCH', `/v1/meters/${meterId}`, { token: pat(), body });
  const consumed = async (id: string) => {
    const reply = await get(id);
    expect(reply.status).toBe(200);
    return (reply.body as { consumed_units: number }).consumed_units;
  };

  it('a new aggregation restarts the counts: every read answers (no 500), the old states are not mixed in, new events count under it', async () => {
    const name = `redefined.${randomUUID()}`;
    const { meterId, customerId, id } = await meterAndCustomer({
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation: { func: 'count' },
    });
    await aggregate(
      customerId,
      [1, 2, 3].map(() => ({ name, metadata: { tokens: 5 } })),
    );
    expect(await consumed(id)).toBe(3);
    expect((await patch(meterId, { aggregation: { func: 'sum', property: 'tokens' } })).status).toBe(200);
    // Each read of the customer meter's usage, right after the change: nothing counted yet.
    expect(await consumed(id)).toBe(0);
    const listed = await list(`customer_id=${customerId}&meter_id=${meterId}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ items: [{ id, consumed_units: 0 }] });
    const state = await world.call('GET', `/v1/customers/${customerId}/state`, { token: pat() });
    expect(documentedReply('getCustomerState', state).status).toBe(200);
    const meters = (state.body as { active_meters: { id: string; consumed_units: number }[] }).active_meters;
    expect(meters.find((m) => m.id === id)).toMatchObject({ consumed_units: 0, balance: 0 });
    const window = `start_timestamp=${new Date(Date.now() - 86_400_000).toISOString()}&end_timestamp=${new Date(Date.now() + 3_600_000).toISOString()}&interval=day`;
    const quantities = await world.call('GET', `/v1/meters/${meterId}/quantities?${window}`, {
      token: pat(),
    });
    expect(documentedReply('getMeterQuantities', quantities).status).toBe(200);
    expect(quantities.body).toMatchObject({ total: 0 });
    // The same hour's aggregate, folded on under the new definition: the sum of the new events only.
    await aggregate(customerId, [
      { name, metadata: { tokens: 5 } },
      { name, metadata: { tokens: 7 } },
    ]);
    expect(await consumed(id)).toBe(12);
    const after = await world.call('GET', `/v1/meters/${meterId}/quantities?${window}`, { token: pat() });
    expect(after.body).toMatchObject({ total: 12 });
  });

  it('a new filter: events only the old one kept no longer count, those the new one keeps do; a unique meter forgets the old property’s values', async () => {
    const [old, next] = [`old.${randomUUID()}`, `new.${randomUUID()}`];
    const clause = (value: string) => ({
      conjunction: 'and',
      clauses: [{ property: 'name', operator: 'eq', value }],
    });
    const counted = await meterAndCustomer({ filter: clause(old), aggregation: { func: 'count' } });
    await aggregate(counted.customerId, [{ name: old, metadata: {} }]);
    expect(await consumed(counted.id)).toBe(1);
    expect((await patch(counted.meterId, { filter: clause(next) })).status).toBe(200);
    await aggregate(counted.customerId, [
      { name: old, metadata: {} },
      { name: next, metadata: {} },
      { name: next, metadata: {} },
    ]);
    expect(await consumed(counted.id)).toBe(2);

    const unique = await meterAndCustomer({
      filter: clause(old),
      aggregation: { func: 'unique', property: 'user' },
    });
    await aggregate(unique.customerId, [
      { name: old, metadata: { user: 'a', team: 'x' } },
      { name: old, metadata: { user: 'b', team: 'x' } },
    ]);
    expect(await consumed(unique.id)).toBe(2);
    expect((await patch(unique.meterId, { aggregation: { func: 'unique', property: 'team' } })).status).toBe(
      200,
    );
    expect(await consumed(unique.id)).toBe(0);
    await aggregate(unique.customerId, [{ name: old, metadata: { user: 'a', team: 'x' } }]);
    expect(await consumed(unique.id)).toBe(1);
  });

  it('a batch that read the meter before a change met an hour already folded under it: the batch fails (to be retried), nothing written', async () => {
    const name = `stale.${randomUUID()}`;
    const { meterId, customerId, id } = await meterAndCustomer({
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation: { func: 'count' },
    });
    const hour = hourOf(new Date().toISOString());
    const owner = { organization_id: world.demo.organization_id, customer_id: customerId, meter_id: meterId };
    // The hour as a consumer that read a later definition (2) left it; the meter still reads 1.
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: new Date().toISOString() }),
      storedHourAggregate(owner, {
        customer_meter_id: id,
        hour,
        state: { func: 'count', count: 4 },
        applied: {},
        definition_version: 2,
        version: 1,
        updated_at: new Date().toISOString(),
      }),
    ]);
    await expect(aggregate(customerId, [{ name, metadata: {} }])).rejects.toThrow(DefinitionChanged);
    const [stored] = await readHours(world.table, id, hour, hour);
    expect(stored).toMatchObject({ state: { count: 4 }, definition_version: 2, version: 1 });
  });
});

describe('the read bound (500 read units per request)', () => {
  /**
   * A count meter and a customer meter of a customer of its own with 700 hours from 2025-01-01 of
   * about 5.7 KB each (50 stream shards applied): about 4 MB, over 500 × 4 KB.
   */
  async function seedHeavyHours(label: string, createdAt: string) {
    const meterId = await seedMeter(world, world.demo.organization_id);
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `${label}-${randomUUID().slice(0, 8)}@x.example`,
    });
    const id = customerMeterId(customer.id, meterId);
    const owner = {
      organization_id: world.demo.organization_id,
      customer_id: customer.id,
      meter_id: meterId,
    };
    const start = Date.parse('2025-01-01T00:00:00Z');
    const hourAt = (i: number) => new Date(start + i * 3_600_000).toISOString().slice(0, 13);
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: createdAt }),
      ...heavyCountHours(owner, id, start),
    ]);
    return { id, customer, meterId, hourAt };
  }

  it('a customer meter with more stored hours than one request reads: Get 503, a page of it 422 at limit, nothing wrong answered', async () => {
    const { id, customer } = await seedHeavyHours('hours', new Date().toISOString());
    const one = await get(id);
    expect(one.status).toBe(503);
    const page = await list(`customer_id=${customer.id}`);
    expect(page.status).toBe(422);
    expect(page.body).toMatchObject({ detail: [{ loc: ['query', 'limit'] }] });
  });

  it('closed hours rolled up by the aggregator: the same customer meter answers its exact total again, a roll-up at a time, and a redefinition does not count it', async () => {
    const { id, customer, meterId, hourAt } = await seedHeavyHours('rollup', '2024-12-31T00:00:00.000Z');
    expect((await get(id)).status).toBe(503);
    const rollupOf = async () =>
      customerMeterRecord(
        (
          await world.table.doc.send(
            new GetCommand({ TableName: world.table.name, Key: keys.customerMeter(id) }),
          )
        ).Item ?? {},
      ).rollup;
    const consumed = async () => {
      const reply = await get(id);
      expect(reply.status).toBe(200);
      return (reply.body as { consumed_units: number }).consumed_units;
    };
    // Three batches that count for it, each rolling up at most what it is given: exact after each
    // (300 hours left, about 1.7 MB, fit one request).
    await aggregateBatch(customer.id, [{ name: 'rollup.a', metadata: {} }], { rollupMaxHours: 400 });
    expect(await rollupOf()).toMatchObject({ through: hourAt(400), hours: 400, state: { count: 400 } });
    expect(await consumed()).toBe(701);
    await aggregateBatch(customer.id, [{ name: 'rollup.b', metadata: {} }], { rollupMaxHours: 200 });
    expect(await rollupOf()).toMatchObject({ through: hourAt(600), hours: 600, state: { count: 600 } });
    expect(await consumed()).toBe(702);
    await aggregateBatch(customer.id, [{ name: 'rollup.c', metadata: {} }]);
    const closed = hourOf(new Date(Date.now() - CLOSED_AFTER_HOURS * 3_600_000).toISOString());
    const done = await rollupOf();
    expect(done).toMatchObject({ hours: 700, state: { count: 700 } });
    // Up to the hour closed at the batch's time (the clock may have passed an hour since).
    expect(done?.through && done.through <= closed).toBe(true);
    expect(await consumed()).toBe(703);
    // Not due again before a day more has closed: the next batch leaves it as it is.
    await aggregateBatch(customer.id, [{ name: 'rollup.d', metadata: {} }]);
    expect(await rollupOf()).toEqual(done);
    expect(await consumed()).toBe(704);
    const listed = await list(`customer_id=${customer.id}&meter_id=${meterId}`);
    expect(listed.body).toMatchObject({ items: [{ id, consumed_units: 704 }] });
    const state = await world.call('GET', `/v1/customers/${customer.id}/state`, { token: pat() });
    const meters = (state.body as { active_meters: { id: string; consumed_units: number }[] }).active_meters;
    expect(meters.find((m) => m.id === id)).toMatchObject({ consumed_units: 704 });
    // A new aggregation: the roll-up is the old definition's, and counts nothing.
    const patched = await world.call('PATCH', `/v1/meters/${meterId}`, {
      token: pat(),
      body: { aggregation: { func: 'sum', property: 'tokens' } },
    });
    expect(patched.status).toBe(200);
    expect(await consumed()).toBe(0);
    await aggregateBatch(customer.id, [{ name: 'rollup.e', metadata: { tokens: 9 } }]);
    expect(await consumed()).toBe(9);
  });

  it('a unique meter rolled up: its distinct values seen before the roll-up are one item each, so its exact total is served again, a roll-up at a time, and a redefinition does not count them', async () => {
    const name = `uniq.${randomUUID()}`;
    const created = await world.call('POST', '/v1/meters/', {
      token: pat(),
      body: {
        name: `Unique ${randomUUID().slice(0, 8)}`,
        filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
        aggregation: { func: 'unique', property: 'user' },
      },
    });
    expect(created.status).toBe(201);
    const meterId = (created.body as { id: string }).id;
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `uniq-${randomUUID().slice(0, 8)}@x.example`,
    });
    const id = customerMeterId(customer.id, meterId);
    const owner = {
      organization_id: world.demo.organization_id,
      customer_id: customer.id,
      meter_id: meterId,
    };
    const start = Date.parse('2025-01-01T00:00:00Z');
    const hourAt = (i: number) => new Date(start + i * 3_600_000).toISOString().slice(0, 13);
    // 700 hours, each with six long values (the same every hour) and one of its own: 706 distinct,
    // 4,900 value items (4,200 of 1.1 KB), over 500 × 4 KB.
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: '2024-12-31T00:00:00.000Z' }),
      ...heavyUniqueHours(owner, id, start),
    ]);
    expect((await get(id)).status).toBe(503);
    const rollupOf = async () =>
      customerMeterRecord(
        (
          await world.table.doc.send(
            new GetCommand({ TableName: world.table.name, Key: keys.customerMeter(id) }),
          )
        ).Item ?? {},
      ).rollup;
    const consumed = async () => {
      const reply = await get(id);
      expect(reply.status).toBe(200);
      return (reply.body as { consumed_units: number }).consumed_units;
    };
    // Each batch counts one value of its own hour ("now", seen again by every batch).
    const batch = (max?: number) =>
      aggregateBatch(customer.id, [{ name, metadata: { user: 'now' } }], max ? { rollupMaxHours: max } : {});
    // At most 400 value items: 57 whole hours (7 values each) and the first of hour 57, left out.
    await batch(400);
    expect(await rollupOf()).toMatchObject({ through: hourAt(57), hours: 57, state: { func: 'unique' } });
    expect((await get(id)).status).toBe(503);
    // 3,000 more value items: through hour 485 (its first four values left out).
    await batch(3000);
    expect(await rollupOf()).toMatchObject({ through: hourAt(485), hours: 485 });
    expect(await consumed()).toBe(706 + 1);
    await batch();
    const closed = hourOf(new Date(Date.now() - CLOSED_AFTER_HOURS * 3_600_000).toISOString());
    const done = await rollupOf();
    expect(done).toMatchObject({ hours: 700 });
    expect(done?.through && done.through <= closed && done.through > hourAt(699)).toBe(true);
    expect(await consumed()).toBe(707);
    // Not due again before a day more has closed.
    await batch();
    expect(await rollupOf()).toEqual(done);
    const listed = await list(`customer_id=${customer.id}&meter_id=${meterId}`);
    expect(listed.body).toMatchObject({ items: [{ id, consumed_units: 707 }] });
    // Another property: the seen values are the old definition's, and count nothing.
    const patched = await world.call('PATCH', `/v1/meters/${meterId}`, {
      token: pat(),
      body: { aggregation: { func: 'unique', property: 'team' } },
    });
    expect(patched.status).toBe(200);
    expect(await consumed()).toBe(0);
    await aggregateBatch(customer.id, [{ name, metadata: { team: 'x' } }]);
    expect(await consumed()).toBe(1);
  });

  it(`more than ${MAX_CUSTOMER_METERS} customer meters and no customer filter: a 422 naming customer_id; with it, served`, async () => {
    const organization = await createOrganization(world.admin, { name: `Many ${randomUUID().slice(0, 8)}` });
    const user = await createUser(world.admin, { email: `many-${randomUUID().slice(0, 8)}@x.example` });
    await addMember(world.admin, organization.id, user.id);
    const { token } = await createPersonalAccessToken(world.admin, {
      userId: user.id,
      scope: 'customer_meters:read',
    });
    const customer = await createCustomer(world.admin, {
      organizationId: organization.id,
      email: `many-${randomUUID().slice(0, 8)}@x.example`,
    });
    const meterId = await seedMeter(world, organization.id);
    const created = new Date().toISOString();
    // Entries only (their customers and meters need not exist to be counted against the bound).
    await putAll(
      Array.from({ length: MAX_CUSTOMER_METERS + 1 }, () => {
        const customerId = randomUUID();
        return storedCustomerMeter({
          id: customerMeterId(customerId, meterId),
          organization_id: organization.id,
          customer_id: customerId,
          meter_id: meterId,
          created_at: created,
        });
      }),
    );
    const refused = await list('limit=10', token);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ detail: [{ loc: ['query', 'customer_id'] }] });
    const mine = await seedCustomerMeter(world, organization.id, customer.id, 4);
    const served = await list(`customer_id=${customer.id}`, token);
    expect(served.status).toBe(200);
    // Its own meter's customer meter, and the catch-all meter's (an empty filter counts its events too).
    const items = (served.body as { items: { id: string; consumed_units: number }[] }).items;
    expect(new Map(items.map((i) => [i.id, i.consumed_units]))).toEqual(
      new Map([
        [mine, 4],
        [customerMeterId(customer.id, meterId), 4],
      ]),
    );
  });
});
