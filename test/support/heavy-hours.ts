/**
 * Usage past a request's read bound, written as the aggregator would have: hour aggregates heavy
 * with the stream shards they applied. The tests of every usage read (Get / List Customer Meters,
 * Customer State, the portal's meters, Get Meter Quantities, `Subscription.meters` on reads, writes
 * and the clock) put them in to see the 503 or 422 past the 500 read units.
 */
import { randomUUID } from 'node:crypto';
import { storedHourAggregate } from '#shared/data/customer-meters.ts';

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
