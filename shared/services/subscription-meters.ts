/**
 * `Subscription.meters`: for each meter a subscription's metered prices name (the prices it holds,
 * `price_ids`), the customer's usage of that meter in the subscription's current period, folded
 * when read from the customer meter's hour aggregates (`shared/data/customer-meters.ts`), with its
 * amount (`meteredAmount`: `unit_amount × max(0, consumed − credited)`, capped at `cap_amount`;
 * credited is 0, no meter credits exist yet).
 *
 * **The period, in hours of arrival.** Usage is kept per UTC hour of arrival, so a period counts
 * whole hours: from the hour `current_period_start` falls in up to, not including, the hour
 * `current_period_end` falls in (that hour is the next period's first), and no further than the
 * hour of now (live) or of `ended_at` (ended). Consecutive periods so share no hour and miss none;
 * an event that arrived in the same hour as the period's start, before it, counts in the period
 * (docs/data-model.md "Subscription meters").
 *
 * **Bounded.** The meters (by key) and the usage Queries (one per subscription and meter, run side
 * by side) are read within the request's `ReadBudget` (500 read units), which throws
 * `ListReadTooCostly` past it: the callers answer 503 for one subscription and 422 at `limit` for
 * a page, never a partial figure.
 */
import {
  type CustomerMeterRecord,
  customerMeterId,
  access as customerMetersAccess,
  hourOf,
  hourStart,
  readMetersAndCustomerMetersWithin,
  readPeriodUsage,
} from '../data/customer-meters.ts';
import type { Table } from '../data/dynamo.ts';
import type { DataAccess } from '../data/grants.ts';
import { LIST_READ_UNITS, ListReadTooCostly, ReadBudget } from '../data/listing.ts';
import type { MeterRecord } from '../data/meters.ts';
import type { MeteredPriceRecord, ProductRecord, SubscriptionRecord } from '../data/records.ts';
import { PolarRequestValidationError, ServiceUnavailable } from '../domain/errors.ts';
import { derivedId } from '../domain/ids.ts';
import { meteredAmount } from '../domain/metered-amount.ts';
import { logError } from '../observability/telemetry.ts';
import { totalsOf } from './customer-meters.ts';
import { presentMeter } from './meters.ts';
import { queryIssue } from './paging.ts';
import type { SubscriptionMeter } from './presenters.ts';

const HOUR_MS = 3_600_000;
const hourBefore = (hour: string): string => hourOf(new Date(hourStart(hour) - HOUR_MS).toISOString());

/** The hours (inclusive, `yyyy-mm-ddThh`) a subscription's current period counts at `now`, or none. */
export function meterHours(
  subscription: Pick<SubscriptionRecord, 'current_period_start' | 'current_period_end' | 'ended_at'>,
  now: Date,
): { from: string; to: string } | undefined {
  const from = hourOf(subscription.current_period_start);
  const last = hourOf(subscription.ended_at ?? now.toISOString());
  const beforeEnd = hourBefore(hourOf(subscription.current_period_end));
  const to = last < beforeEnd ? last : beforeEnd;
  return from <= to ? { from, to } : undefined;
}

/** The metered prices a subscription holds, by the meter they name (a product's, as it is now). */
export function meteredPricesOf(
  subscription: SubscriptionRecord,
  product: ProductRecord,
): Map<string, MeteredPriceRecord[]> {
  const held = new Set(subscription.price_ids);
  const byMeter = new Map<string, MeteredPriceRecord[]>();
  for (const price of product.prices) {
    if (price.amount_type !== 'metered_unit' || !held.has(price.id)) continue;
    byMeter.set(price.meter_id, [...(byMeter.get(price.meter_id) ?? []), price]);
  }
  return byMeter;
}

/** What `subscriptionMetersFrom` folds the usage with: the meters priced, the customer meters that exist. */
export interface MeterRecords {
  meters: ReadonlyMap<string, MeterRecord>;
  /** By id; the roll-up on one says which days its day aggregates cover. */
  customerMeters: ReadonlyMap<string, Pick<CustomerMeterRecord, 'rollup'>>;
}

/**
 * The meters of each subscription (by its id; `[]` for one without metered prices), for a page at
 * once: one read by key of every meter the page's prices name, then every usage Query in parallel
 * (a customer meter and window two subscriptions share is read once).
 */
export async function subscriptionMeters(
  table: Table,
  subscriptions: readonly { subscription: SubscriptionRecord; product: ProductRecord }[],
  now: Date,
  budget: ReadBudget,
): Promise<Map<string, SubscriptionMeter[]>> {
  const priced = pricedMeters(subscriptions);
  const meterIds = priced.flatMap(({ prices }) => [...prices.keys()]);
  if (meterIds.length === 0) return subscriptionMetersFrom(table, subscriptions, EMPTY, now, budget);
  const customerMeterIds = priced.flatMap(({ subscription, prices }) =>
    [...prices.keys()].map((meterId) => customerMeterId(subscription.customer_id, meterId)),
  );
  const read = await readMetersAndCustomerMetersWithin(table, meterIds, customerMeterIds, budget);
  return subscriptionMetersFrom(table, subscriptions, read, now, budget);
}

const EMPTY: MeterRecords = { meters: new Map(), customerMeters: new Map() };

const pricedMeters = (
  subscriptions: readonly { subscription: SubscriptionRecord; product: ProductRecord }[],
) =>
  subscriptions.map(({ subscription, product }) => ({
    subscription,
    prices: meteredPricesOf(subscription, product),
  }));

/**
 * The meters of each subscription as `subscriptionMeters` answers them, from meters and customer
 * meters the caller has read already (Customer State reads its organization's meters and its
 * customer's customer meters anyway): only the usage Queries, side by side, within `budget`.
 */
export async function subscriptionMetersFrom(
  table: Table,
  subscriptions: readonly { subscription: SubscriptionRecord; product: ProductRecord }[],
  { meters, customerMeters }: MeterRecords,
  now: Date,
  budget: ReadBudget,
): Promise<Map<string, SubscriptionMeter[]>> {
  const answered = new Map<string, SubscriptionMeter[]>();
  const reads = new Map<string, Promise<ReturnType<typeof totalsOf>>>();
  const meterOf = (subscription: SubscriptionRecord, meterId: string) => {
    const meter = meters.get(meterId);
    // Meters are archived, never removed: a missing one is a broken table, not a client error.
    if (!meter) throw new Error(`subscription ${subscription.id} prices a missing meter`);
    return meter;
  };
  const totals = (subscription: SubscriptionRecord, meter: MeterRecord) => {
    const hours = meterHours(subscription, now);
    if (!hours) return Promise.resolve(totalsOf(meter, { hours: [], values: new Set() }));
    const id = customerMeterId(subscription.customer_id, meter.id);
    const key = `${id}\u0000${hours.from}\u0000${hours.to}`;
    let read = reads.get(key);
    if (!read) {
      read = readPeriodUsage(table, id, hours, meter, budget, customerMeters.get(id)).then((usage) =>
        totalsOf(meter, usage),
      );
      reads.set(key, read);
    }
    return read;
  };
  await Promise.all(
    pricedMeters(subscriptions).map(async ({ subscription, prices }) => {
      const items = await Promise.all(
        [...prices.entries()].map(async ([meterId, meterPrices]) => {
          const meter = meterOf(subscription, meterId);
          const { consumed_units, credited_units } = await totals(subscription, meter);
          const amount = meterPrices.reduce(
            (sum, price) =>
              sum + meteredAmount(price.unit_amount, price.cap_amount, consumed_units, credited_units),
            0,
          );
          return {
            created_at: subscription.created_at,
            modified_at: null,
            id: derivedId('subscription-meter', subscription.id, meterId),
            consumed_units,
            credited_units,
            amount: Math.min(amount, Number.MAX_SAFE_INTEGER),
            meter_id: meterId,
            meter: presentMeter(meter),
          } as SubscriptionMeter;
        }),
      );
      answered.set(subscription.id, items);
    }),
  );
  return answered;
}

/**
 * One subscription's meters within a fresh 500 read units, `ListReadTooCostly` past them: `[]` at
 * no read when it holds no metered price (the free signup, the hottest write, reads nothing more).
 */
export async function readSubscriptionMeters(
  table: Table,
  subscription: SubscriptionRecord,
  product: ProductRecord,
  now: Date,
): Promise<SubscriptionMeter[]> {
  if (meteredPricesOf(subscription, product).size === 0) return [];
  const read = await subscriptionMeters(table, [{ subscription, product }], now, new ReadBudget());
  return read.get(subscription.id) ?? [];
}

/**
 * One subscription's meters (Get Subscription, the portal's Get), within a request's 500 read units:
 * past them a 503, never a partial figure (the window's usage will not shrink, but a roll-up of
 * closed hours would serve it: docs/data-model.md).
 *
 * The writes that present a subscription (Create, Update, Revoke, the portal's cancel and uncancel)
 * call it too, for the subscription as the write leaves it and at the write's `now`, before their
 * transaction: its answer and its events then carry what Get would answer at that moment, the
 * transaction is unchanged, and a 503 past the bound comes before anything is written.
 */
export async function oneSubscriptionMeters(
  table: Table,
  subscription: SubscriptionRecord,
  product: ProductRecord,
  now: Date,
): Promise<SubscriptionMeter[]> {
  try {
    return await readSubscriptionMeters(table, subscription, product, now);
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    logError('subscription meters over the read bound', { subscription_id: subscription.id });
    throw new ServiceUnavailable();
  }
}

/** A page's refusal past the read bound: 422 at `limit`, naming what to do. */
export function pageMetersTooCostly(limit: number | null | undefined): PolarRequestValidationError {
  return new PolarRequestValidationError([
    queryIssue(
      'limit',
      `The meters of this page's subscriptions hold more usage than one request may read (${LIST_READ_UNITS} read units): use a smaller limit or filter by customer_id.`,
      limit ?? null,
    ),
  ]);
}

export { ListReadTooCostly };

/**
 * IAM (shared/data/grants.ts): what `subscriptionMeters` reads for subscriptions holding metered
 * prices, for every operation that presents them (the reads, the writes, the clock): their meters
 * and customer meters (one batch), then each one's usage in the period (a Query each). Built by a
 * pure call: a spread would otherwise keep the grants in every bundle that imports this module.
 */
export const access = /* @__PURE__ */ (() =>
  ({
    subscriptionMeters: [
      ...customerMetersAccess.readMetersAndCustomerMetersWithin,
      ...customerMetersAccess.readPeriodUsage,
    ],
  }) as const satisfies DataAccess)();
