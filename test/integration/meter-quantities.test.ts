/**
 * Get Meter Quantities against DynamoDB Local under its function's deployed policy: the series and
 * total equal a plain fold of the distinct events per bucket (here, not the domain's fold), for
 * every aggregation, every customer function, with and without customer filters; the buckets' time
 * basis (hour of arrival, whole intervals, time zones); the window's rules and the read bound; an
 * archived meter; tenant safety.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { customerMeterId, storedCustomerMeter } from '#shared/data/customer-meters.ts';
import type { MeterAggregation } from '#shared/domain/meter.ts';
import { MAX_CUSTOMER_METERS } from '#shared/services/customer-meters.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { type SeedEvent, seedMeterUsage } from '../cards/get-meter-quantities.ts';
import { documentedReply } from '../support/contract.ts';
import { heavyCountHours, heavyUniqueHours, RECURRING_VALUES } from '../support/heavy-hours.ts';
import { putItems } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('meter-quantities');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const quantities = (id: string, query: string, token = pat()) =>
  world
    .call('GET', `/v1/meters/${id}/quantities?${query}`, { token })
    .then((r) => documentedReply('getMeterQuantities', r));
type Answer = { quantities: { timestamp: string; quantity: number }[]; total: number };

const HOUR = 3_600_000;
const DAY0 = Date.parse('2025-06-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** Writes items as the operator would (batches of 25). */
const putAll = (items: Record<string, unknown>[]): Promise<void> => putItems(world.table, items);

// ---------------------------------------------------------------------------------------------
// The reference: a plain fold over the events, written out here
// ---------------------------------------------------------------------------------------------

type Func = MeterAggregation['func'];
const FUNCS: Func[] = ['count', 'sum', 'max', 'min', 'avg', 'unique'];
const aggregationOf = (func: Func): MeterAggregation =>
  func === 'count' ? { func } : ({ func, property: 'units' } as MeterAggregation);

/** The events a meter of `func` counts (count and unique: all; the others: those with a number). */
const counted = (func: Func, events: readonly SeedEvent[]) =>
  func === 'count' || func === 'unique'
    ? events
    : events.filter((e) => typeof e.metadata?.units === 'number');

/** The meter's quantity of some events, or undefined when it counts none of them. */
function plain(func: Func, events: readonly SeedEvent[]): number | undefined {
  const kept = counted(func, events);
  if (kept.length === 0) return undefined;
  const numbers = kept.map((e) => e.metadata?.units as number);
  switch (func) {
    case 'count':
      return kept.length;
    case 'sum':
      return numbers.reduce((a, b) => a + b, 0);
    case 'avg':
      return numbers.reduce((a, b) => a + b, 0) / numbers.length;
    case 'max':
      return Math.max(...numbers);
    case 'min':
      return Math.min(...numbers);
    case 'unique':
      return new Set(
        kept.flatMap((e) => (e.metadata?.units === undefined ? [] : [JSON.stringify(e.metadata.units)])),
      ).size;
  }
}

function combined(fn: Func, values: readonly number[]): number {
  if (fn === 'count') return values.length;
  if (values.length === 0) return 0;
  if (fn === 'sum') return values.reduce((a, b) => a + b, 0);
  if (fn === 'avg') return values.reduce((a, b) => a + b, 0) / values.length;
  if (fn === 'max') return Math.max(...values);
  if (fn === 'min') return Math.min(...values);
  return new Set(values).size;
}

/** The expected answer over UTC buckets [start + k·size, …) of `count` buckets. */
function reference(
  func: Func,
  events: readonly SeedEvent[],
  buckets: { start: number; end: number; timestamp: number }[],
  customerFn?: Func,
): Answer {
  const inBucket = (b: { start: number; end: number }) =>
    events.filter((e) => {
      const hour = Math.floor(Date.parse(e.ingested_at) / HOUR) * HOUR;
      return hour >= b.start && hour < b.end;
    });
  const windowEvents = buckets.flatMap(inBucket);
  if (!customerFn) {
    return {
      quantities: buckets.map((b) => ({
        timestamp: iso(b.timestamp),
        quantity: plain(func, inBucket(b)) ?? 0,
      })),
      total: plain(func, windowEvents) ?? 0,
    };
  }
  const perBucket = buckets.map((b) => {
    const events = inBucket(b);
    const customers = [...new Set(events.map((e) => e.customer_id))];
    return customers.flatMap((c) => {
      const q = plain(
        func,
        events.filter((e) => e.customer_id === c),
      );
      return q === undefined ? [] : [q];
    });
  });
  const values = perBucket.map((qs) => combined(customerFn, qs));
  const withEvents = values.filter((_, i) => (perBucket[i] as number[]).length > 0);
  const total =
    func === 'count' || func === 'sum'
      ? values.reduce((a, b) => a + b, 0)
      : func === 'max' || func === 'min'
        ? withEvents.length === 0
          ? 0
          : (func === 'max' ? Math.max : Math.min)(...withEvents)
        : (plain(func, windowEvents) ?? 0);
  return {
    quantities: buckets.map((b, i) => ({ timestamp: iso(b.timestamp), quantity: values[i] as number })),
    total,
  };
}

const utcBuckets = (start: number, size: number, count: number) =>
  Array.from({ length: count }, (_, k) => ({
    timestamp: start + k * size,
    start: start + k * size,
    end: start + (k + 1) * size,
  }));

// ---------------------------------------------------------------------------------------------

describe('the quantities equal a plain fold of the distinct events per bucket', () => {
  let customers: { id: string; external_id: string }[];
  let events: SeedEvent[];
  const meters = new Map<Func, string>();

  beforeAll(async () => {
    customers = [];
    for (let i = 0; i < 3; i++) {
      const external = `quantities-${randomUUID()}`;
      const customer = await createCustomer(world.admin, {
        organizationId: world.demo.organization_id,
        email: `q${i}-${randomUUID().slice(0, 8)}@x.example`,
        externalId: external,
      });
      customers.push({ id: customer.id, external_id: external });
    }
    // Three days of events at varied hours, customers and values: integers and halves (exact sums),
    // a negative, repeated values (unique), no value, a value of the wrong type (left out).
    events = [];
    const unitsOf = [3, 1.5, -2, 7, 3, undefined, 'many', 0, 12, 3];
    for (let i = 0; i < 60; i++) {
      const customer = customers[(i * 7) % 3] as { id: string };
      const hour = (i * 5) % 72;
      const units = unitsOf[i % unitsOf.length];
      events.push({
        customer_id: customer.id,
        ingested_at: iso(DAY0 + hour * HOUR + ((i * 13) % 60) * 60_000),
        metadata: units === undefined ? {} : { units },
      });
    }
    // A customer whose events in its bucket carry no number: one of no numeric meter's customers
    // there (the hosted service keeps only events of the right type), one of unique's.
    const bare = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `q-bare-${randomUUID().slice(0, 8)}@x.example`,
    });
    events.push(
      { customer_id: bare.id, ingested_at: iso(DAY0 + 30 * HOUR), metadata: {} },
      { customer_id: bare.id, ingested_at: iso(DAY0 + 31 * HOUR), metadata: { units: 'none' } },
      // Alone in its day without the property: still one of unique's customers (0 distinct values).
      { customer_id: bare.id, ingested_at: iso(DAY0 + 55 * HOUR), metadata: {} },
    );
    // Outside every window asked below: never counted.
    events.push({
      customer_id: customers[0]?.id as string,
      ingested_at: '2025-06-10T12:00:00.000Z',
      metadata: { units: 100 },
    });
    for (const func of FUNCS) {
      meters.set(func, await seedMeterUsage(world, world.demo.organization_id, aggregationOf(func), events));
    }
  });

  const windows = [
    {
      name: 'by hour over one day',
      query: `start_timestamp=${iso(DAY0)}&end_timestamp=${iso(DAY0 + 23 * HOUR)}&interval=hour`,
      buckets: () => utcBuckets(DAY0, HOUR, 24),
    },
    {
      name: 'by day over three days',
      query: `start_timestamp=${iso(DAY0)}&end_timestamp=${iso(DAY0 + 2 * 24 * HOUR)}&interval=day`,
      buckets: () => utcBuckets(DAY0, 24 * HOUR, 3),
    },
  ];

  for (const func of FUNCS) {
    it(`${func}: without filter, by customer id, by external id, by hour and by day`, async () => {
      const id = meters.get(func) as string;
      for (const window of windows) {
        const all = await quantities(id, window.query);
        expect(all.status, window.name).toBe(200);
        expect(all.body, window.name).toEqual(reference(func, events, window.buckets()));
        const [a, b] = customers as [
          { id: string; external_id: string },
          { id: string; external_id: string },
        ];
        const mine = events.filter((e) => e.customer_id === a.id);
        const byId = await quantities(id, `${window.query}&customer_id=${a.id}`);
        expect(byId.body, window.name).toEqual(reference(func, mine, window.buckets()));
        const two = events.filter((e) => e.customer_id === a.id || e.customer_id === b.id);
        const byBoth = await quantities(
          id,
          `${window.query}&customer_id=${a.id}&external_customer_id=${b.external_id}`,
        );
        expect(byBoth.body, window.name).toEqual(reference(func, two, window.buckets()));
      }
    });

    it(`${func}: each customer_aggregation_function, over every customer and over two`, async () => {
      const id = meters.get(func) as string;
      const window = windows[1] as (typeof windows)[number];
      const [a, b] = customers as unknown as [{ id: string }, { id: string }];
      const two = events.filter((e) => e.customer_id === a.id || e.customer_id === b.id);
      for (const fn of FUNCS) {
        const all = await quantities(id, `${window.query}&customer_aggregation_function=${fn}`);
        expect(all.status, fn).toBe(200);
        expect(all.body, fn).toEqual(reference(func, events, window.buckets(), fn));
        const some = await quantities(
          id,
          `${window.query}&customer_aggregation_function=${fn}&customer_id=${a.id}&customer_id=${b.id}`,
        );
        expect(some.body, fn).toEqual(reference(func, two, window.buckets(), fn));
      }
    });
  }

  it('a bucket is the whole interval its timestamp falls in; timestamps are the series from start_timestamp', async () => {
    const id = meters.get('count') as string;
    // Starting at 06:30 by day: the buckets are still whole UTC days, stamped 06:30.
    const start = DAY0 + 6.5 * HOUR;
    const reply = await quantities(
      id,
      `start_timestamp=${iso(start)}&end_timestamp=${iso(start + 2 * 24 * HOUR)}&interval=day`,
    );
    expect(reply.body).toEqual({
      ...reference('count', events, utcBuckets(DAY0, 24 * HOUR, 3)),
      quantities: reference('count', events, utcBuckets(DAY0, 24 * HOUR, 3)).quantities.map((q, k) => ({
        ...q,
        timestamp: iso(start + k * 24 * HOUR),
      })),
    });
  });

  it('in a time zone, days are cut at its midnight (America/New_York: 04:00Z in June); an hour counts where its start falls', async () => {
    const id = meters.get('count') as string;
    const start = Date.parse('2025-06-01T00:00:00-04:00');
    const reply = await quantities(
      id,
      `start_timestamp=${encodeURIComponent(iso(start))}&end_timestamp=${iso(start + 24 * HOUR)}&interval=day&timezone=America/New_York`,
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(reference('count', events, utcBuckets(start, 24 * HOUR, 2)));
    // Asia/Kolkata (+05:30): the day of 2025-06-01 is [05-31T18:30Z, 06-01T18:30Z): it holds the
    // UTC hours 19:00Z of 05-31 to 18:00Z of 06-01 (each counts where its start falls).
    const india = await quantities(
      id,
      `start_timestamp=2025-06-01T00:00:00%2B05:30&end_timestamp=2025-06-01T00:00:00%2B05:30&interval=day&timezone=Asia/Kolkata`,
    );
    const dayStart = Date.parse('2025-05-31T18:30:00Z');
    expect(india.body).toEqual(
      reference('count', events, [
        { timestamp: dayStart, start: dayStart + 0.5 * HOUR, end: dayStart + 24.5 * HOUR },
      ]),
    );
  });

  it('an archived meter answers as it did live (as the hosted service)', async () => {
    const id = meters.get('sum') as string;
    const window = windows[1] as (typeof windows)[number];
    const before = await quantities(id, window.query);
    const archived = await world.call('PATCH', `/v1/meters/${id}`, {
      token: pat(),
      body: { is_archived: true },
    });
    expect(archived.status).toBe(200);
    const after = await quantities(id, window.query);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
  });

  it('another organization’s customer named in a filter contributes nothing, as an unknown one', async () => {
    const id = meters.get('count') as string;
    const window = windows[1] as (typeof windows)[number];
    const empty = reference('count', [], window.buckets());
    for (const filter of [
      `customer_id=${world.demo.other_organization.customer_id}`,
      `customer_id=${randomUUID()}`,
      `external_customer_id=${randomUUID()}`,
    ]) {
      const reply = await quantities(id, `${window.query}&${filter}`);
      expect(reply.status, filter).toBe(200);
      expect(reply.body, filter).toEqual(empty);
    }
  });
});

describe('round trips', () => {
  it('a customer by id: four by the hour (the token, the meter, the customer, one usage Query), five by the day (its customer meter read by key: its roll-up); without a filter: four (the list for the customer, with their roll-ups); unique: one Query more (its values), its roll-up read as for the others', async () => {
    const byDay = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-07T00:00:00Z&interval=day';
    const byHour = 'start_timestamp=2025-06-02T00:00:00Z&end_timestamp=2025-06-02T23:00:00Z&interval=hour';
    const customer = world.demo.customer_id;
    const at = '2025-06-02T10:00:00.000Z';
    const counted = await seedMeterUsage(world, world.demo.organization_id, { func: 'count' }, [
      { customer_id: customer, ingested_at: at },
    ]);
    const unique = await seedMeterUsage(
      world,
      world.demo.organization_id,
      { func: 'unique', property: 'units' },
      [{ customer_id: customer, ingested_at: at, metadata: { units: 1 } }],
    );
    const cases: [string, string, string, number][] = [
      [counted, byHour, `&customer_id=${customer}`, 4],
      [counted, byDay, `&customer_id=${customer}`, 5],
      [counted, byDay, '', 4],
      [unique, byHour, `&customer_id=${customer}`, 5],
      [unique, byDay, `&customer_id=${customer}`, 6],
    ];
    for (const [id, window, filter, trips] of cases) {
      world.resetCount();
      const reply = await quantities(id, `${window}${filter}`);
      expect(reply.status).toBe(200);
      expect((reply.body as Answer).total).toBe(1);
      expect(world.roundTripsOf('get-meter-quantities'), `${window}${filter}`).toBe(trips);
    }
  });
});

describe('tenant safety', () => {
  it('another organization’s meter, an unknown id: the same 404; its own organization reads it; a malformed id: 422', async () => {
    const window = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=day';
    const other = world.demo.other_organization;
    const theirs = await seedMeterUsage(world, other.organization_id, { func: 'count' }, [
      { customer_id: other.customer_id, ingested_at: '2025-06-01T10:00:00.000Z' },
    ]);
    const refused = await quantities(theirs, window);
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual((await quantities(randomUUID(), window)).body);
    const own = await quantities(theirs, window, other.personal_access_token);
    expect(own.status).toBe(200);
    expect((own.body as Answer).total).toBe(1);
    expect((await quantities('not-an-id', window)).status).toBe(422);
  });
});

describe('the window’s rules: a 422 at the parameter, never a 500', () => {
  let meter: string;
  beforeAll(async () => {
    meter = await seedMeterUsage(world, world.demo.organization_id, { func: 'count' }, []);
  });
  const refusedAt = async (query: string, loc: (string | number)[]) => {
    const reply = await quantities(meter, query);
    expect(reply.status, query).toBe(422);
    expect(
      (reply.body as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc),
      query,
    ).toContainEqual(loc);
  };

  it('end before start, a start before 2023, an unknown interval or function, required parameters missing', async () => {
    await refusedAt('start_timestamp=2025-06-02T00:00:00Z&end_timestamp=2025-06-01T00:00:00Z&interval=day', [
      'query',
      'end_timestamp',
    ]);
    await refusedAt('start_timestamp=2022-12-31T23:00:00Z&end_timestamp=2023-01-01T00:00:00Z&interval=day', [
      'query',
      'start_timestamp',
    ]);
    await refusedAt(
      'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=minute',
      ['query', 'interval'],
    );
    await refusedAt(
      'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=day&customer_aggregation_function=median',
      ['query', 'customer_aggregation_function'],
    );
    await refusedAt('start_timestamp=yesterday&end_timestamp=2025-06-02T00:00:00Z&interval=day', [
      'query',
      'start_timestamp',
    ]);
    await refusedAt('end_timestamp=2025-06-02T00:00:00Z&interval=day', ['query', 'start_timestamp']);
  });

  it('a window too long for its interval (the hosted service’s days per interval): 422 at interval; the longest allowed is served', async () => {
    const limits = { hour: 7, day: 366, week: 371, month: 1460, year: 3650 } as const;
    const start = Date.parse('2023-01-01T00:00:00Z');
    for (const [interval, days] of Object.entries(limits)) {
      await refusedAt(
        `start_timestamp=${iso(start)}&end_timestamp=${iso(start + days * 24 * HOUR + 1000)}&interval=${interval}`,
        ['query', 'interval'],
      );
      const served = await quantities(
        meter,
        `start_timestamp=${iso(start)}&end_timestamp=${iso(start + days * 24 * HOUR)}&interval=${interval}`,
      );
      expect(served.status, interval).toBe(200);
    }
    const hourly = await quantities(
      meter,
      `start_timestamp=${iso(start)}&end_timestamp=${iso(start + 7 * 24 * HOUR)}&interval=hour`,
    );
    expect((hourly.body as Answer).quantities).toHaveLength(7 * 24 + 1);
  });

  it('a time zone that is not an IANA name: 422 at timezone', async () => {
    const window = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=day';
    for (const zone of ['Mars/Olympus_Mons', '%2B05:00', 'utc%20', '..%2Fetc', '']) {
      await refusedAt(`${window}&timezone=${zone}`, ['query', 'timezone']);
    }
    expect((await quantities(meter, `${window}&timezone=Europe/Paris`)).status).toBe(200);
  });

  it('the metadata filter (not supported) and more than 50 customers named: 422 at the parameter', async () => {
    const window = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=day';
    await refusedAt(`${window}&metadata[plan]=pro`, ['query', 'metadata']);
    const many = Array.from({ length: 51 }, () => `customer_id=${randomUUID()}`).join('&');
    await refusedAt(`${window}&${many}`, ['query', 'customer_id']);
    const fifty = Array.from({ length: 50 }, () => `customer_id=${randomUUID()}`).join('&');
    expect((await quantities(meter, `${window}&${fifty}`)).status).toBe(200);
  });
});

describe('the read bound (500 read units per request)', () => {
  /**
   * A count meter's customer meter with 700 hours from 2025-01-01T00 of about 3.5 KB each (many
   * stream shards applied): about 2.4 MB, over 500 × 4 KB. `rollUp` runs a batch of one event now
   * for the customer through the meter aggregator, which rolls up every closed hour and writes
   * their day aggregates.
   */
  async function heavyCustomerMeter(unique = false) {
    const name = `heavy.${randomUUID()}`;
    const meter = newMeter(
      {
        name: `Heavy ${name.slice(6, 14)}`,
        filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
        aggregation: unique ? { func: 'unique', property: 'user' } : { func: 'count' },
      },
      world.demo.organization_id,
      new Date('2024-01-01T00:00:00Z'),
    );
    await storeNewMeter(world.admin.table, meter);
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `hours-${randomUUID().slice(0, 8)}@x.example`,
    });
    const id = customerMeterId(customer.id, meter.id);
    const owner = {
      organization_id: world.demo.organization_id,
      customer_id: customer.id,
      meter_id: meter.id,
    };
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: '2024-12-31T00:00:00.000Z' }),
      ...(unique
        ? // The six recurring values and one of its own each hour, but none on 2025-01-10 (its
          // hours have events without the property).
          heavyUniqueHours(owner, id, HEAVY_START, 700, (i) =>
            i >= 216 && i < 240 ? [] : [...RECURRING_VALUES, JSON.stringify(`u${i}`)],
          )
        : heavyCountHours(owner, id, HEAVY_START)),
    ]);
    const rollUp = () =>
      aggregateEvents({ table: world.admin.table, now: () => new Date() }, `seed-${randomUUID()}`, [
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
      ]);
    return { meterId: meter.id, customer, rollUp };
  }
  const HEAVY_START = Date.parse('2025-01-01T00:00:00Z');
  const DAY = 24 * HOUR;
  const wide = `start_timestamp=${iso(HEAVY_START)}&end_timestamp=${iso(HEAVY_START + 40 * DAY)}&interval=day`;

  it('a window whose stored hours take more than 500 read units: 422 at start_timestamp; a shorter window served', async () => {
    const { meterId, customer } = await heavyCustomerMeter();
    for (const filter of ['', `&customer_id=${customer.id}`]) {
      const refused = await quantities(meterId, `${wide}${filter}`);
      expect(refused.status, filter).toBe(422);
      expect(refused.body, filter).toMatchObject({ detail: [{ loc: ['query', 'start_timestamp'] }] });
    }
    // Seven days (168 of those hours, about 0.6 MB): served, exactly.
    const week = await quantities(
      meterId,
      `start_timestamp=${iso(HEAVY_START)}&end_timestamp=${iso(HEAVY_START + 6 * DAY)}&interval=day`,
    );
    expect(week.status).toBe(200);
    expect(week.body).toEqual({
      quantities: Array.from({ length: 7 }, (_, k) => ({
        timestamp: iso(HEAVY_START + k * DAY),
        quantity: 24,
      })),
      total: 168,
    });
  });

  it('once rolled up, the same window is served from a day aggregate a day (with and without a filter); a week cut in another time zone reads the days that straddle its buckets in hours', async () => {
    const { meterId, customer, rollUp } = await heavyCustomerMeter();
    await rollUp();
    // 700 hours: 29 whole days (01-01 to 01-29), then 4 hours of 01-30.
    const daily = (k: number) => (k < 29 ? 24 : k === 29 ? 4 : 0);
    for (const filter of ['', `&customer_id=${customer.id}`]) {
      const served = await quantities(meterId, `${wide}${filter}`);
      expect(served.status, filter).toBe(200);
      expect(served.body, filter).toEqual({
        quantities: Array.from({ length: 41 }, (_, k) => ({
          timestamp: iso(HEAVY_START + k * DAY),
          quantity: daily(k),
        })),
        total: 700,
      });
    }
    // Europe/Paris weeks start on Sunday 23:00Z in January: each Sunday's UTC day is in two weeks.
    const paris = await quantities(
      meterId,
      `start_timestamp=${iso(HEAVY_START)}&end_timestamp=${iso(HEAVY_START + 29 * DAY)}&interval=week&timezone=Europe/Paris&customer_id=${customer.id}`,
    );
    expect(paris.status).toBe(200);
    // 01-01T00Z to 01-05T22Z; three whole weeks; 01-26T23Z to 01-30T03Z.
    expect((paris.body as Answer).quantities.map((q) => q.quantity)).toEqual([119, 168, 168, 168, 77]);
    expect((paris.body as Answer).total).toBe(700);
  });

  it('a unique meter, once rolled up: the same window served from its day values and day aggregates (with and without a filter, by customer), exact after a partial roll-up; a week cut in another time zone reads its straddling days by hour', async () => {
    const { meterId, customer, rollUp } = await heavyCustomerMeter(true);
    for (const filter of ['', `&customer_id=${customer.id}`]) {
      expect((await quantities(meterId, `${wide}${filter}`)).status, filter).toBe(422);
    }
    // 4,732 value items: three steps of at most 2,000; after the first, 410 hours of values left.
    await rollUp();
    expect((await quantities(meterId, wide)).status).toBe(422);
    // 6 recurring values and one a day's hour, none on 01-10 (k = 9); 01-30 has 4 hours.
    const daily = (k: number) => (k === 9 ? 0 : k < 29 ? 6 + 24 : k === 29 ? 6 + 4 : 0);
    const expected = {
      quantities: Array.from({ length: 41 }, (_, k) => ({
        timestamp: iso(HEAVY_START + k * DAY),
        quantity: daily(k),
      })),
      total: 6 + 700 - 24,
    };
    await rollUp();
    expect(await quantities(meterId, wide)).toMatchObject({ status: 200, body: expected });
    await rollUp();
    for (const filter of ['', `&customer_id=${customer.id}`]) {
      const served = await quantities(meterId, `${wide}${filter}`);
      expect(served.status, filter).toBe(200);
      expect(served.body, filter).toEqual(expected);
    }
    // By customer: the customer has events every day to 01-30, 01-10 too (its day aggregate).
    const byCustomer = await quantities(
      meterId,
      `${wide}&customer_id=${customer.id}&customer_aggregation_function=count`,
    );
    expect((byCustomer.body as Answer).quantities.map((q) => q.quantity)).toEqual(
      Array.from({ length: 41 }, (_, k) => (k < 30 ? 1 : 0)),
    );
    // Europe/Paris weeks: each Sunday's UTC day is in two weeks, read by hour.
    const paris = await quantities(
      meterId,
      `start_timestamp=${iso(HEAVY_START)}&end_timestamp=${iso(HEAVY_START + 29 * DAY)}&interval=week&timezone=Europe/Paris&customer_id=${customer.id}`,
    );
    expect(paris.status).toBe(200);
    expect((paris.body as Answer).quantities.map((q) => q.quantity)).toEqual([125, 150, 174, 174, 83]);
    expect((paris.body as Answer).total).toBe(682);
  });

  it(`more than ${MAX_CUSTOMER_METERS} customer meters in the organization and no customer filter: 422 at customer_id; with it, served`, async () => {
    const organization = await createOrganization(world.admin, { name: `Many ${randomUUID().slice(0, 8)}` });
    const user = await createUser(world.admin, { email: `many-${randomUUID().slice(0, 8)}@x.example` });
    await addMember(world.admin, organization.id, user.id);
    const { token } = await createPersonalAccessToken(world.admin, { userId: user.id, scope: 'meters:read' });
    const customer = await createCustomer(world.admin, {
      organizationId: organization.id,
      email: `many-${randomUUID().slice(0, 8)}@x.example`,
    });
    const meterId = await seedMeterUsage(world, organization.id, { func: 'count' }, [
      { customer_id: customer.id, ingested_at: '2025-06-01T10:00:00.000Z' },
      { customer_id: customer.id, ingested_at: '2025-06-01T11:00:00.000Z' },
    ]);
    const created = new Date().toISOString();
    await putAll(
      Array.from({ length: MAX_CUSTOMER_METERS }, () => {
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
    const window = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-01T00:00:00Z&interval=day';
    const refused = await quantities(meterId, window, token);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ detail: [{ loc: ['query', 'customer_id'] }] });
    const served = await quantities(meterId, `${window}&customer_id=${customer.id}`, token);
    expect(served.status).toBe(200);
    expect(served.body).toEqual({
      quantities: [{ timestamp: '2025-06-01T00:00:00.000Z', quantity: 2 }],
      total: 2,
    });
  });
});
