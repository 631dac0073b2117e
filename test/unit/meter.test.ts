/**
 * The meter domain (shared/domain/meter.ts) and metered amounts (shared/domain/metered-amount.ts):
 * the filter's rules case by case, and property tests that folding in batches and merging the
 * batches' states in any order answers what one plain fold over the distinct events answers, and
 * what an independent reference computes, for every aggregation; and which events a meter counts
 * over its archives (shared/services/meter-aggregation.ts `meterCounts`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MeterRecord } from '#shared/data/meters.ts';
import {
  definitionIssues,
  emptyState,
  exactNumber,
  exactOf,
  exactText,
  type FilterClause,
  type FoldState,
  foldEvents,
  MAX_FILTER_CLAUSES,
  MAX_FILTER_DEPTH,
  type MeterAggregation,
  type MeterEvent,
  type MeterFilter,
  matches,
  mergeStates,
  normalizeFilter,
  quantityOf,
} from '#shared/domain/meter.ts';
import { meteredAmount, parseUnitAmount } from '#shared/domain/metered-amount.ts';
import { meterCounts } from '#shared/services/meter-aggregation.ts';

const event = (metadata: Record<string, unknown> = {}, over: Partial<MeterEvent> = {}): MeterEvent => ({
  name: 'api.call',
  source: 'user',
  timestamp: '2026-11-27T10:00:00.750Z',
  metadata,
  ...over,
});
const where = (clause: FilterClause): MeterFilter => ({ conjunction: 'and', clauses: [clause] });
const is = (
  property: string,
  operator: FilterClause['operator'],
  value: FilterClause['value'],
  e: MeterEvent,
) => matches(where({ property, operator, value }), e);

describe('filter', () => {
  it('compares strings with strings, numbers with numbers, booleans with booleans', () => {
    const e = event({ tier: 'pro', tokens: 12.5, beta: true });
    expect(is('tier', 'eq', 'pro', e)).toBe(true);
    expect(is('tier', 'gt', 'basic', e)).toBe(true);
    expect(is('tokens', 'gte', 12, e)).toBe(true);
    expect(is('tokens', 'lt', 13, e)).toBe(true);
    expect(is('tokens', 'eq', 12, e)).toBe(false);
    expect(is('beta', 'eq', true, e)).toBe(true);
    expect(is('beta', 'gt', false, e)).toBe(true);
  });

  it('a type mismatch is false for every operator, ne included; a missing property is false', () => {
    const e = event({ tokens: 5, tier: '5', beta: false });
    for (const op of ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'] as const) {
      expect(is('tokens', op, '5', e), `number ${op} string`).toBe(false);
      expect(is('tier', op, 5, e), `string ${op} number`).toBe(false);
      expect(is('beta', op, 0, e), `boolean ${op} number`).toBe(false);
      expect(is('tokens', op, true, e), `number ${op} boolean`).toBe(false);
      expect(is('absent', op, 5, e), `missing ${op}`).toBe(false);
    }
    expect(is('absent', 'like', '', e)).toBe(false);
    expect(is('absent', 'not_like', 'x', e)).toBe(false);
  });

  it('like and not_like test the text of the value, whatever its type', () => {
    const e = event({ path: '/v1/items/42', n: 1234, ok: true });
    expect(is('path', 'like', 'items', e)).toBe(true);
    expect(is('path', 'not_like', 'orders', e)).toBe(true);
    expect(is('n', 'like', 23, e)).toBe(true);
    expect(is('n', 'like', '23', e)).toBe(true);
    expect(is('ok', 'like', 'tru', e)).toBe(true);
    expect(is('name', 'like', 'api.', e)).toBe(true);
  });

  it('name, source and timestamp are the event fields; timestamp in whole seconds; dots read nested metadata', () => {
    const e = event({ name: 'meta', a: { b: { c: 7 } } });
    expect(is('name', 'eq', 'api.call', e)).toBe(true);
    expect(is('source', 'eq', 'user', e)).toBe(true);
    const seconds = Math.floor(Date.parse('2026-11-27T10:00:00.750Z') / 1000);
    expect(is('timestamp', 'eq', seconds, e)).toBe(true);
    expect(is('timestamp', 'eq', '2026-11-27T10:00:00.750Z', e)).toBe(false);
    expect(is('a.b.c', 'eq', 7, e)).toBe(true);
    expect(is('a.b', 'eq', 7, e)).toBe(false);
    expect(is('a.x.c', 'eq', 7, e)).toBe(false);
    // `metadata.` is removed when a meter is written, as the hosted service does.
    expect(normalizeFilter(where({ property: 'metadata.a.b.c', operator: 'eq', value: 7 }))).toEqual(
      where({ property: 'a.b.c', operator: 'eq', value: 7 }),
    );
  });

  it('and / or nest; an empty and and an empty or both match', () => {
    const e = event({ tier: 'pro', n: 3 });
    const tierPro = { property: 'tier', operator: 'eq', value: 'pro' } as const;
    const nBig = { property: 'n', operator: 'gt', value: 10 } as const;
    expect(matches({ conjunction: 'and', clauses: [tierPro, nBig] }, e)).toBe(false);
    expect(matches({ conjunction: 'or', clauses: [tierPro, nBig] }, e)).toBe(true);
    expect(
      matches({ conjunction: 'and', clauses: [tierPro, { conjunction: 'or', clauses: [nBig, tierPro] }] }, e),
    ).toBe(true);
    expect(matches({ conjunction: 'and', clauses: [] }, e)).toBe(true);
    expect(matches({ conjunction: 'or', clauses: [] }, e)).toBe(true);
  });

  it('bounds depth and clauses, and refuses empty properties', () => {
    let deep: MeterFilter = { conjunction: 'and', clauses: [] };
    for (let i = 0; i < MAX_FILTER_DEPTH; i++) deep = { conjunction: 'or', clauses: [deep] };
    expect(definitionIssues(deep, { func: 'count' })).toHaveLength(1);
    const wide = {
      conjunction: 'and' as const,
      clauses: Array.from({ length: MAX_FILTER_CLAUSES + 1 }, () => ({
        property: 'x',
        operator: 'eq' as const,
        value: 1,
      })),
    };
    expect(definitionIssues(wide).map((i) => i.loc)).toEqual([['filter']]);
    expect(
      definitionIssues(where({ property: 'metadata.', operator: 'eq', value: 1 }), {
        func: 'sum',
        property: 'a..b',
      }).map((i) => i.loc),
    ).toEqual([
      ['filter', 'clauses', '0', 'property'],
      ['aggregation', 'property'],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Folds
// ---------------------------------------------------------------------------------------------

/** Dyadic values (k / 1024, |k| < 2^40): their float sums are exact, so a naive sum is a true reference. */
const dyadicArb = fc.integer({ min: -(2 ** 40), max: 2 ** 40 }).map((k) => k / 1024);
const anyDoubleArb = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 });
/** Metadata values of every kind, so that wrong types meet every aggregation. */
const valueArb = (numbers: fc.Arbitrary<number>) =>
  fc.oneof(
    { weight: 4, arbitrary: numbers },
    { weight: 1, arbitrary: fc.constantFrom('5', 'a', '') },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant({ nested: 1 }) },
  );
const eventsArb = (numbers: fc.Arbitrary<number>) =>
  fc.array(
    fc.record({
      name: fc.constantFrom('api.call', 'upload'),
      source: fc.constant('user'),
      timestamp: fc.integer({ min: 0, max: 2_000_000_000_000 }).map((ms) => new Date(ms).toISOString()),
      metadata: fc.record(
        { v: valueArb(numbers), tier: fc.constantFrom('pro', 'free') },
        { requiredKeys: [] },
      ),
    }),
    { maxLength: 60 },
  );
const filterArb: fc.Arbitrary<MeterFilter> = fc.constantFrom<MeterFilter>(
  { conjunction: 'and', clauses: [] },
  { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: 'api.call' }] },
  {
    conjunction: 'or',
    clauses: [
      { property: 'tier', operator: 'eq', value: 'pro' },
      { property: 'v', operator: 'gt', value: 0 },
    ],
  },
);
const AGGREGATIONS: MeterAggregation[] = [
  { func: 'count' },
  { func: 'sum', property: 'v' },
  { func: 'max', property: 'v' },
  { func: 'min', property: 'v' },
  { func: 'avg', property: 'v' },
  { func: 'unique', property: 'v' },
];

/** Splits `items` at the given cut points (sorted, deduplicated) into consecutive batches. */
function batches<T>(items: T[], cuts: number[]): T[][] {
  const points = [...new Set(cuts.map((c) => c % (items.length + 1)))].sort((a, b) => a - b);
  const out: T[][] = [];
  let start = 0;
  for (const p of [...points, items.length]) {
    out.push(items.slice(start, p));
    start = p;
  }
  return out;
}

/** Merges states in an order drawn by `order`: pairs picked at random until one is left. */
function mergeInOrder(states: FoldState[], order: number[]): FoldState {
  const pool = [...states];
  let i = 0;
  while (pool.length > 1) {
    const a = pool.splice((order[i++ % order.length] ?? 0) % pool.length, 1)[0] as FoldState;
    const b = pool.splice((order[i++ % order.length] ?? 0) % pool.length, 1)[0] as FoldState;
    pool.push(i % 2 === 0 ? mergeStates(a, b) : mergeStates(b, a));
  }
  return pool[0] as FoldState;
}

/** The reference: a plain computation over the matching events, written without the fold. */
function reference(filter: MeterFilter, aggregation: MeterAggregation, events: MeterEvent[]): number {
  const kept = events.filter((e) => matches(filter, e));
  if (aggregation.func === 'count') return kept.length;
  const raw = kept.map((e) => e.metadata[aggregation.property]);
  if (aggregation.func === 'unique') {
    return new Set(raw.filter((v) => v !== undefined && v !== null).map((v) => JSON.stringify(v))).size;
  }
  const numbers = raw.filter((v): v is number => typeof v === 'number');
  if (numbers.length === 0) return 0;
  switch (aggregation.func) {
    case 'sum':
      return numbers.reduce((a, b) => a + b, 0);
    case 'avg':
      return numbers.reduce((a, b) => a + b, 0) / numbers.length;
    case 'max':
      return Math.max(...numbers);
    case 'min':
      return Math.min(...numbers);
  }
}

describe('folds: batches merged in any order equal one plain fold over the distinct events', () => {
  for (const aggregation of AGGREGATIONS) {
    it(`${aggregation.func}: equal states, equal to an independent reference (values that sum exactly in floats)`, () => {
      fc.assert(
        fc.property(
          eventsArb(dyadicArb),
          filterArb,
          fc.array(fc.nat(), { maxLength: 8 }),
          fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
          (events, filter, cuts, order) => {
            const plain = foldEvents(filter, aggregation, events);
            const states = batches(events, cuts).map((batch) => foldEvents(filter, aggregation, batch));
            const merged = mergeInOrder(states, order);
            expect(merged).toEqual(plain);
            // Folding on from a state is the same as merging a fresh batch into it.
            const [first = [], ...rest] = batches(events, cuts);
            const continued = rest.reduce(
              (state, batch) => foldEvents(filter, aggregation, batch, state),
              foldEvents(filter, aggregation, first),
            );
            expect(continued).toEqual(plain);
            expect(quantityOf(merged)).toBe(reference(filter, aggregation, events));
          },
        ),
        { numRuns: 300 },
      );
    });

    it(`${aggregation.func}: any doubles, any order: one answer`, () => {
      fc.assert(
        fc.property(
          eventsArb(anyDoubleArb),
          filterArb,
          fc.array(fc.nat(), { maxLength: 8 }),
          fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
          (events, filter, cuts, order) => {
            const plain = foldEvents(filter, aggregation, events);
            const reversed = foldEvents(filter, aggregation, [...events].reverse());
            const merged = mergeInOrder(
              batches(events, cuts).map((batch) => foldEvents(filter, aggregation, batch)),
              order,
            );
            expect(merged).toEqual(plain);
            expect(reversed).toEqual(plain);
            expect(Object.is(quantityOf(merged), quantityOf(plain))).toBe(true);
          },
        ),
        { numRuns: 200 },
      );
    });
  }

  it('the empty state is the identity of every merge', () => {
    for (const aggregation of AGGREGATIONS) {
      const state = foldEvents({ conjunction: 'and', clauses: [] }, aggregation, [
        event({ v: 3 }),
        event({ v: 5 }),
      ]);
      expect(mergeStates(state, emptyState(aggregation))).toEqual(state);
      expect(mergeStates(emptyState(aggregation), state)).toEqual(state);
    }
  });

  it('sums exactly where floats drift: 1e16 + 1 − 1e16 is 1 in every order', () => {
    const all = { conjunction: 'and' as const, clauses: [] };
    const sum = { func: 'sum' as const, property: 'v' };
    const values = [1e16, 1, -1e16];
    expect(values.reduce((a, b) => a + b, 0)).toBe(0); // the drift a float fold has
    for (const order of [values, [...values].reverse(), [1, 1e16, -1e16]]) {
      expect(
        quantityOf(
          foldEvents(
            all,
            sum,
            order.map((v) => event({ v })),
          ),
        ),
      ).toBe(1);
    }
    expect(exactText(exactOf(0.1))).toBe('0.1000000000000000055511151231257827021181583404541015625');
    expect(exactNumber(exactOf(-2.5e-320))).toBe(-2.5e-320);
  });

  it('a value of the wrong type is left out of a numeric aggregation, not refused', () => {
    const all = { conjunction: 'and' as const, clauses: [] };
    const events = [event({ v: 4 }), event({ v: '100' }), event({ v: true }), event({}), event({ v: 8 })];
    expect(quantityOf(foldEvents(all, { func: 'avg', property: 'v' }, events))).toBe(6);
    expect(quantityOf(foldEvents(all, { func: 'sum', property: 'v' }, events))).toBe(12);
    expect(quantityOf(foldEvents(all, { func: 'max', property: 'v' }, events))).toBe(8);
    expect(quantityOf(foldEvents(all, { func: 'min', property: 'v' }, events))).toBe(4);
    expect(quantityOf(foldEvents(all, { func: 'count' }, events))).toBe(5);
    // `unique` counts values of any type: 4, '100', true, 8.
    expect(quantityOf(foldEvents(all, { func: 'unique', property: 'v' }, events))).toBe(4);
    // name and source are never numeric; timestamp is, in epoch seconds.
    expect(quantityOf(foldEvents(all, { func: 'sum', property: 'name' }, events))).toBe(0);
    expect(quantityOf(foldEvents(all, { func: 'max', property: 'timestamp' }, events))).toBe(
      Math.floor(Date.parse('2026-11-27T10:00:00.750Z') / 1000),
    );
  });

  it('unique: 1 and 1.0 are one value, "1" another, objects by content', () => {
    const all = { conjunction: 'and' as const, clauses: [] };
    const events = [
      event({ v: 1 }),
      event({ v: 1.0 }),
      event({ v: '1' }),
      event({ v: { a: 1, b: 2 } }),
      event({ v: { b: 2, a: 1 } }),
    ];
    expect(quantityOf(foldEvents(all, { func: 'unique', property: 'v' }, events))).toBe(3);
  });
});

// ---------------------------------------------------------------------------------------------
// Metered amounts
// ---------------------------------------------------------------------------------------------

describe('meteredAmount', () => {
  it('is exact where float arithmetic drifts', () => {
    // 1.005 × 100 is 100.49999999999999 in floats: rounded, 100. Exactly it is 100.5: 101.
    expect(Math.round(1.005 * 100)).toBe(100);
    expect(meteredAmount('1.005', null, 100, 0)).toBe(101);
    expect(meteredAmount('0.5', null, 1, 0)).toBe(1); // half away from zero
    expect(meteredAmount('0.499999999999', null, 1, 0)).toBe(0);
    expect(meteredAmount('33.333333333333', null, 3, 0)).toBe(100);
    expect(meteredAmount('0.000000000001', null, 2 ** 53 - 1, 0)).toBe(9007);
  });

  it('bills max(0, consumed − credited) units, capped', () => {
    expect(meteredAmount('10', null, 5, 2)).toBe(30);
    expect(meteredAmount('10', null, 2, 5)).toBe(0);
    expect(meteredAmount('10', 25, 5, 2)).toBe(25);
    expect(meteredAmount('10', 0, 5, 0)).toBe(0);
    // A consumed quantity that is not whole (an average, a sum of fractions) is taken at its exact value.
    expect(meteredAmount('5', null, 0.1, 0)).toBe(1); // 0.5000000000000000277… → 1
    expect(() => meteredAmount('1e-3', null, 1, 0)).toThrow(RangeError);
  });

  it('matches a reference at fixed scale for whole units', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 17n - 1n }),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.option(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { nil: null }),
        (digits, scale, consumed, credited, cap) => {
          const text = digits.toString().padStart(scale + 1, '0');
          const unit = scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
          const parsed = parseUnitAmount(unit);
          if (!parsed.ok) return; // more than 5 digits before the point
          // Reference: everything at scale 10^12, one integer division.
          const units = BigInt(Math.max(0, consumed - credited));
          const scaled = digits * 10n ** BigInt(12 - scale) * units;
          const rounded = (scaled + 5n * 10n ** 11n) / 10n ** 12n;
          const limited =
            rounded > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : rounded;
          const expected = cap !== null && limited > BigInt(cap) ? cap : Number(limited);
          expect(meteredAmount(parsed.text, cap, consumed, credited)).toBe(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads unit amounts as the hosted service bounds them: > 0, 17 digits, 12 decimals', () => {
    expect(parseUnitAmount('0.50')).toEqual({ ok: true, text: '0.5' });
    expect(parseUnitAmount('007')).toEqual({ ok: true, text: '7' });
    expect(parseUnitAmount('.25')).toEqual({ ok: true, text: '0.25' });
    expect(parseUnitAmount(0.001)).toEqual({ ok: true, text: '0.001' });
    expect(parseUnitAmount(1e-7)).toEqual({ ok: true, text: '0.0000001' });
    expect(parseUnitAmount('99999.999999999999')).toEqual({ ok: true, text: '99999.999999999999' });
    for (const bad of ['0', '0.000', '-1', '1e3', 'abc', '', '.', '0.0000000000001', '100000', -1, 0]) {
      expect(parseUnitAmount(bad as string).ok, String(bad)).toBe(false);
    }
  });
});

describe('meterCounts: a meter counts the events that arrive while it is live', () => {
  const meter = (over: Partial<MeterRecord>): MeterRecord => ({
    id: 'm',
    organization_id: 'o',
    name: 'n',
    unit: 'scalar',
    custom_label: null,
    custom_multiplier: null,
    filter: { conjunction: 'and', clauses: [] },
    aggregation: { func: 'count' },
    metadata: {},
    created_at: '2026-01-01T00:00:00.000Z',
    modified_at: null,
    archived_at: null,
    archived_periods: [],
    last_billed_event_id: null,
    definition_version: 1,
    version: 1,
    ...over,
  });
  const at = (hour: number) => new Date(Date.UTC(2026, 0, 1, hour)).toISOString();

  it('from its creation, until its archive', () => {
    const archived = meter({ archived_at: at(5) });
    expect([-1, 0, 4, 5, 6].map((hour) => meterCounts(archived, at(hour)))).toEqual([
      false,
      true,
      true,
      false,
      false,
    ]);
  });

  it('never an event that arrived while it was archived, once it is unarchived and whenever the consumer reaches it', () => {
    // Archived from 2 to 4, unarchived since; archived again from 8 (as `updateMeter` records it).
    const history = meter({ archived_periods: [{ from: at(2), to: at(4) }], archived_at: at(8) });
    expect([1, 2, 3, 4, 7, 8].map((hour) => meterCounts(history, at(hour)))).toEqual([
      true,
      false,
      false,
      true,
      true,
      false,
    ]);
  });
});
