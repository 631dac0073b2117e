/**
 * Usage past a request's read bound, written as the aggregator would have: hour aggregates heavy
 * with the stream shards they applied. The tests of every usage read (Get / List Customer Meters,
 * Customer State, the portal's meters, Get Meter Quantities, `Subscription.meters` on reads, writes
 * and the clock) put them in to see the 503 or 422 past the 500 read units.
 */
import { randomUUID } from 'node:crypto';
import { storedHourAggregate, valueKey } from '#shared/data/customer-meters.ts';

const HOUR_MS = 3_600_000;

/**
 * `hours` consecutive hour aggregates of one customer meter from `start` (ms, on the hour), one
 * event counted in each, each having applied 50 stream shards: 3.5 to 5.7 KB an hour, so that 700
 * of them (the default) read past 500 × 4 KB.
 */
export function heavyCountHours(
  owner: Parameters<typeof storedHourAggregate>[0],
  customerMeterId: string,
  start: number,
  hours = 700,
): Record<string, unknown>[] {
  const applied = Object.fromEntries(
    Array.from({ length: 50 }, (_, i) => [
      `shardId-${String(i).padStart(20, '0')}-${randomUUID()}`,
      '1'.padStart(40, '0'),
    ]),
  );
  return Array.from({ length: hours }, (_, i) =>
    storedHourAggregate(owner, {
      customer_meter_id: customerMeterId,
      hour: new Date(start + i * HOUR_MS).toISOString().slice(0, 13),
      state: { func: 'count', count: 1 },
      applied,
      definition_version: 1,
      version: 1,
      updated_at: new Date().toISOString(),
    }),
  );
}

/** The six long values (500 characters each) every hour of `heavyUniqueHours` holds. */
export const RECURRING_VALUES = Array.from({ length: 6 }, (_, k) =>
  JSON.stringify(String.fromCharCode(97 + k).repeat(500)),
);

/**
 * `hours` consecutive hours of a `unique` customer meter from `start` (ms, on the hour), as the
 * aggregator writes them: each an hour aggregate and its value items, by default the six
 * `RECURRING_VALUES` and one of its own (`"u<i>"`): 6 + `hours` distinct, 7 value items an hour
 * (1,140 bytes each of the long ones, 148 its own, by `itemBytes`), so that 700 hours (the default,
 * 4,900 items, about 4.9 MB) read past 500 × 4 KB.
 */
export function heavyUniqueHours(
  owner: Parameters<typeof storedHourAggregate>[0],
  customerMeterId: string,
  start: number,
  hours = 700,
  valuesOf: (i: number) => string[] = (i) => [...RECURRING_VALUES, JSON.stringify(`u${i}`)],
): Record<string, unknown>[] {
  return Array.from({ length: hours }, (_, i) => {
    const hour = new Date(start + i * HOUR_MS).toISOString().slice(0, 13);
    return [
      storedHourAggregate(owner, {
        customer_meter_id: customerMeterId,
        hour,
        state: { func: 'unique', values: [] },
        applied: { 'shardId-seeded': '1'.padStart(40, '0') },
        definition_version: 1,
        version: 1,
        updated_at: new Date().toISOString(),
      }),
      ...valuesOf(i).map((value) => ({
        ...valueKey(customerMeterId, hour, value),
        entity: 'customer_meter_value',
        hour,
        value,
        definition_version: 1,
      })),
    ];
  }).flat();
}
