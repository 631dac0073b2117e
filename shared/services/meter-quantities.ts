/**
 * Get Meter Quantities: a meter's time series over a window, folded from the hour aggregates the
 * meter aggregator keeps per customer meter (`shared/data/customer-meters.ts`).
 *
 * **Buckets.** The series is `start_timestamp`, then one interval more each step (in `timezone`:
 * `hour` adds 60 minutes, `day`/`week`/`month`/`year` add to the local date, a month-end clamped as
 * PostgreSQL does), up to `end_timestamp`; each timestamp's bucket is the whole interval it falls
 * in, cut in `timezone` (a week starts on Monday), as the hosted service's `date_trunc`. An hour
 * aggregate (UTC hour of *arrival*) counts in the bucket its hour's start falls in.
 *
 * **Quantities**, as the hosted service (polar/meter/service.py, facts only): without
 * `customer_aggregation_function`, a bucket is the meter's aggregation over all its events (the
 * states merged across customers with `mergeStates`; for `unique`, the union of distinct values);
 * with it, the meter's aggregation per customer that has events in the bucket, then that function
 * over those customers' quantities (`count` counts them, `unique` counts distinct quantities). An
 * empty bucket is 0. `total`: for `count` and `sum` meters the sum of the buckets, for `max`/`min`
 * their extreme over the buckets with events, for `avg`/`unique` the meter's aggregation over every
 * event of the window (whatever the customer function). Without a customer function each is the
 * merged state of the whole window, so it equals a plain fold of the window's distinct events.
 *
 * **Bounded.** The window spans at most the hosted service's days per interval; a request reads at
 * most `LIST_READ_UNITS` (500) read units (the customer meters' usage queries, at least one unit
 * per customer meter of the meter): past that it is a 422 at `start_timestamp`, never a partial
 * series (docs/limits.md).
 */
import {
  type CustomerMeterRecord,
  customerMeterId,
  access as customerMetersAccess,
  customersByExternalId,
  dayAfter,
  dayOfHour,
  hourOf,
  hourStart,
  listCustomerMeterEntries,
  readCustomerMeters,
  readUsageBetween,
  type WindowUsage,
} from '../data/customer-meters.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { LIST_READ_UNITS, ListReadTooCostly, ReadBudget } from '../data/listing.ts';
import type { MeterRecord } from '../data/meters.ts';
import { access as metersAccess, getMeter as readMeter } from '../data/meters.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { readCustomers, access as usageEventsAccess } from '../data/usage-events.ts';
import { PolarRequestValidationError, ResourceNotFound } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import {
  addExact,
  EXACT_ZERO,
  emptyState,
  exactNumber,
  exactOf,
  type FoldState,
  mergeStates,
  quantityOf,
} from '../domain/meter.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { GetMeterQuantitiesQuery, MeterQuantities } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { MAX_CUSTOMER_METERS, MAX_NAMED_CUSTOMERS } from './customer-meters.ts';
import { queryIssue } from './paging.ts';

export type TimeInterval = GetMeterQuantitiesQuery['interval'];
type AggregationFunction = NonNullable<GetMeterQuantitiesQuery['customer_aggregation_function']>;

/** The longest window per interval, in days (the hosted service's `MAX_INTERVAL_DAYS`). */
export const MAX_WINDOW_DAYS: Readonly<Record<TimeInterval, number>> = {
  hour: 7,
  day: 366,
  week: 7 * 53,
  month: 365 * 4,
  year: 365 * 10,
};
/** The earliest start (the hosted service's `MIN_DATETIME`). */
export const MIN_START = '2023-01-01T00:00:00Z';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

// ---------------------------------------------------------------------------------------------
// Time zone arithmetic (Intl's IANA data; no library)
// ---------------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

/** A formatter of `timeZone`, or undefined when it is not a time zone name. */
function formatter(timeZone: string): Intl.DateTimeFormat | undefined {
  const known = formatters.get(timeZone);
  if (known) return known;
  // Intl takes IANA names (and their aliases) only: an offset such as "+05:00" is refused.
  try {
    const made = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size < 1000) formatters.set(timeZone, made);
    return made;
  } catch {
    return undefined;
  }
}

interface Local {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  ms: number;
}

function localOf(at: number, zone: Intl.DateTimeFormat): Local {
  const parts: Record<string, number> = {};
  for (const part of zone.formatToParts(new Date(at))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    y: parts.year as number,
    mo: parts.month as number,
    d: parts.day as number,
    h: (parts.hour as number) % 24,
    mi: parts.minute as number,
    s: parts.second as number,
    ms: ((at % 1000) + 1000) % 1000,
  };
}

const wall = (l: Local) => Date.UTC(l.y, l.mo - 1, l.d, l.h, l.mi, l.s, l.ms);

/** The instant of a local wall time (Date.UTC normalises overflowing fields). */
function instantOf(l: Local, zone: Intl.DateTimeFormat): number {
  const target = wall(l);
  const offset = (at: number) => wall(localOf(at, zone)) - at;
  const first = target - offset(target);
  return target - offset(first);
}

const daysIn = (y: number, mo: number) => new Date(Date.UTC(y, mo, 0)).getUTCDate();

/** The start of the interval `at` falls in, in the zone. */
export function truncate(at: number, interval: TimeInterval, zone: Intl.DateTimeFormat): number {
  const l = localOf(at, zone);
  // An hour keeps its offset (the repeated hour of a DST change is two buckets).
  if (interval === 'hour') return at - (l.mi * 60 + l.s) * 1000 - l.ms;
  const day = { ...l, h: 0, mi: 0, s: 0, ms: 0 };
  if (interval === 'day') return instantOf(day, zone);
  if (interval === 'week') {
    const weekday = new Date(Date.UTC(l.y, l.mo - 1, l.d)).getUTCDay(); // 0 = Sunday
    return instantOf({ ...day, d: l.d - ((weekday + 6) % 7) }, zone);
  }
  if (interval === 'month') return instantOf({ ...day, d: 1 }, zone);
  return instantOf({ ...day, mo: 1, d: 1 }, zone);
}

/** One interval after `at`: 60 minutes, or the local date moved (a month-end clamped). */
export function addInterval(at: number, interval: TimeInterval, zone: Intl.DateTimeFormat): number {
  if (interval === 'hour') return at + HOUR_MS;
  const l = localOf(at, zone);
  if (interval === 'day') return instantOf({ ...l, d: l.d + 1 }, zone);
  if (interval === 'week') return instantOf({ ...l, d: l.d + 7 }, zone);
  const [y, mo] = interval === 'month' ? [l.y + Math.floor(l.mo / 12), (l.mo % 12) + 1] : [l.y + 1, l.mo];
  return instantOf({ ...l, y, mo, d: Math.min(l.d, daysIn(y, mo)) }, zone);
}

/** A bucket of the series: its timestamp, and the interval [start, end) it covers. */
export interface Bucket {
  timestamp: number;
  start: number;
  end: number;
}

export function bucketsOf(
  start: number,
  end: number,
  interval: TimeInterval,
  zone: Intl.DateTimeFormat,
): Bucket[] {
  const buckets: Bucket[] = [];
  for (let t = start; t <= end; t = addInterval(t, interval, zone)) {
    const from = truncate(t, interval, zone);
    buckets.push({
      timestamp: t,
      start: from,
      end: interval === 'hour' ? from + HOUR_MS : addInterval(from, interval, zone),
    });
  }
  return buckets;
}

/** The bucket an instant falls in, or -1 (buckets ascend and do not overlap). */
function bucketIndex(buckets: readonly Bucket[], at: number): number {
  let lo = 0;
  let hi = buckets.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const b = buckets[mid] as Bucket;
    if (at < b.start) hi = mid - 1;
    else if (at >= b.end) lo = mid + 1;
    else return mid;
  }
  return -1;
}

const hourText = (at: number) => hourOf(new Date(at).toISOString());

/** Whether `test` holds for a UTC day within the hours `from` to `to`. */
function anyDay(from: string, to: string, test: (day: string) => boolean): boolean {
  for (let day = dayOfHour(from); day <= dayOfHour(to); day = dayAfter(day)) if (test(day)) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// The request's rules
// ---------------------------------------------------------------------------------------------

const issue = (name: string, msg: string, input: unknown) =>
  new PolarRequestValidationError([queryIssue(name, msg, input)]);

/** The window's buckets, or the 422 of the rule it breaks. */
export function windowOf(query: GetMeterQuantitiesQuery): { buckets: Bucket[]; zone: Intl.DateTimeFormat } {
  const timezone = query.timezone ?? 'UTC';
  const zone = formatter(timezone);
  if (!zone) throw issue('timezone', 'Not an IANA time zone name (such as UTC or Europe/Paris).', timezone);
  const start = Date.parse(query.start_timestamp);
  const end = Date.parse(query.end_timestamp);
  if (start < Date.parse(MIN_START)) {
    throw issue(
      'start_timestamp',
      `The window starts at ${MIN_START} at the earliest.`,
      query.start_timestamp,
    );
  }
  if (end < start) {
    throw issue('end_timestamp', 'The end of the window is before its start.', query.end_timestamp);
  }
  const days = MAX_WINDOW_DAYS[query.interval];
  if (end - start > days * DAY_MS) {
    throw issue(
      'interval',
      `The interval is too small for the given date range: by ${query.interval} a window spans at most ${days} days. Use a larger interval or reduce the date range.`,
      query.interval,
    );
  }
  return { buckets: bucketsOf(start, end, query.interval, zone), zone };
}

/**
 * The customer meters to read: those of the named customers (each of the meter's organization with
 * this meter), or without a filter, this meter's among the organization's list (whose copies hold
 * their roll-ups: which days their day aggregates cover). Also the read units spent on the way (an
 * item read by key is one unit).
 */
async function customerMetersOf(
  deps: Dependencies,
  meter: MeterRecord,
  query: GetMeterQuantitiesQuery,
  budget: ReadBudget,
): Promise<{ ids: string[]; records?: Map<string, CustomerMeterRecord>; units: number }> {
  const customerIds = [...new Set((query.customer_id ?? []).map(normalizeId))];
  const externalIds = [...new Set(query.external_customer_id ?? [])];
  if (customerIds.length + externalIds.length === 0) {
    const list = await listCustomerMeterEntries(
      deps.table,
      meter.organization_id,
      MAX_CUSTOMER_METERS,
      budget,
    );
    if (list.more) {
      throw issue(
        'customer_id',
        `This organization has more than ${MAX_CUSTOMER_METERS} customer meters: filter by customer_id or external_customer_id.`,
        null,
      );
    }
    const records = list.items.filter((r: CustomerMeterRecord) => r.meter_id === meter.id);
    return { ids: records.map((r) => r.id), records: new Map(records.map((r) => [r.id, r])), units: 0 };
  }
  if (customerIds.length + externalIds.length > MAX_NAMED_CUSTOMERS) {
    const [name, input] =
      customerIds.length > 0
        ? ['customer_id', query.customer_id]
        : ['external_customer_id', query.external_customer_id];
    throw issue(
      name as string,
      `At most ${MAX_NAMED_CUSTOMERS} customers can be named in one request.`,
      input,
    );
  }
  const customers = new Set<string>();
  if (customerIds.length > 0) {
    // Only the meter's organization's customers count (another's contributes nothing).
    for (const customer of (await readCustomers(deps.table, customerIds)).values()) {
      if (customer.organization_id === meter.organization_id) customers.add(customer.id);
    }
  }
  if (externalIds.length > 0) {
    for (const id of (await customersByExternalId(deps.table, meter.organization_id, externalIds)).values()) {
      customers.add(id);
    }
  }
  return {
    ids: [...customers].map((customer) => customerMeterId(customer, meter.id)),
    units: customerIds.length + externalIds.length,
  };
}

// ---------------------------------------------------------------------------------------------
// The fold
// ---------------------------------------------------------------------------------------------

/** One customer's share of one bucket. */
interface Cell {
  state: FoldState;
  /** Whether the customer has an event the meter counts in the bucket (the hosted service's group). */
  present: boolean;
  values: Set<string>;
}

/** A customer meter's usage of the window, by bucket. */
function cellsOf(meter: MeterRecord, buckets: readonly Bucket[], usage: WindowUsage): Map<number, Cell> {
  const cells = new Map<number, Cell>();
  const cell = (i: number): Cell => {
    let c = cells.get(i);
    if (!c) {
      c = { state: emptyState(meter.aggregation), present: false, values: new Set() };
      cells.set(i, c);
    }
    return c;
  };
  for (const hour of usage.hours) {
    const i = bucketIndex(buckets, hourStart(hour.hour));
    if (i < 0) continue;
    const c = cell(i);
    c.state = mergeStates(c.state, hour.state);
    // `unique` counts every event its filter keeps, even one without the property.
    if (meter.aggregation.func === 'unique') c.present = true;
  }
  for (const { hour, value } of usage.values) {
    const i = bucketIndex(buckets, hourStart(hour));
    if (i < 0) continue;
    const c = cell(i);
    c.values.add(value);
    c.present = true;
  }
  for (const c of cells.values()) {
    if (meter.aggregation.func === 'unique') c.state = { func: 'unique', values: [...c.values].sort() };
    // An event left out of a numeric aggregation (no number) is no customer's event here (the
    // hosted service's meter clause keeps only events of the right type).
    else c.present = (c.state as { count: number }).count > 0;
  }
  return cells;
}

const exactSum = (values: readonly number[]) =>
  exactNumber(values.reduce((sum, v) => addExact(sum, exactOf(v)), EXACT_ZERO));

/** The customer function over the quantities of the customers present in a bucket (0 when none). */
function combine(fn: AggregationFunction, quantities: readonly number[]): number {
  if (fn === 'count') return quantities.length;
  if (quantities.length === 0) return 0;
  switch (fn) {
    case 'sum':
      return exactSum(quantities);
    case 'avg':
      return exactSum(quantities) / quantities.length;
    case 'max':
      return Math.max(...quantities);
    case 'min':
      return Math.min(...quantities);
    case 'unique':
      return new Set(quantities.map((q) => q + 0)).size;
  }
}

/** The series and its total from each customer meter's cells (see the module's comment). */
export function quantitiesOf(
  meter: MeterRecord,
  buckets: readonly Bucket[],
  perCustomer: readonly Map<number, Cell>[],
  fn: AggregationFunction | null | undefined,
): MeterQuantities {
  const func = meter.aggregation.func;
  const merged = buckets.map((_, i) =>
    perCustomer.reduce((sum, cells) => {
      const c = cells.get(i);
      return c ? mergeStates(sum, c.state) : sum;
    }, emptyState(meter.aggregation)),
  );
  const all = merged.reduce(mergeStates, emptyState(meter.aggregation));
  if (!fn) {
    return {
      quantities: buckets.map((b, i) => ({
        timestamp: new Date(b.timestamp).toISOString(),
        quantity: quantityOf(merged[i] as FoldState),
      })),
      total: quantityOf(all),
    };
  }
  const present = buckets.map((_, i) =>
    perCustomer.flatMap((cells) => {
      const c = cells.get(i);
      return c?.present ? [quantityOf(c.state)] : [];
    }),
  );
  const quantities = present.map((qs) => combine(fn, qs));
  const withEvents = quantities.filter((_, i) => (present[i] as number[]).length > 0);
  const total =
    func === 'count' || func === 'sum'
      ? exactSum(quantities)
      : func === 'max' || func === 'min'
        ? withEvents.length === 0
          ? 0
          : (func === 'max' ? Math.max : Math.min)(...withEvents)
        : quantityOf(all);
  return {
    quantities: buckets.map((b, i) => ({
      timestamp: new Date(b.timestamp).toISOString(),
      quantity: quantities[i] as number,
    })),
    total,
  };
}

export async function getMeterQuantities(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  query: GetMeterQuantitiesQuery,
): Promise<MeterQuantities> {
  if (Object.keys(query.metadata ?? {}).length > 0) {
    throw issue(
      'metadata',
      'Filtering quantities by event metadata is not supported by this API.',
      query.metadata,
    );
  }
  const { buckets } = windowOf(query);
  const meter = await readMeter(deps.table, normalizeId(id));
  // An archived meter answers as a live one (the hosted service's get does not filter them).
  if (!meter || !principal.organizationIds.includes(meter.organization_id)) throw new ResourceNotFound();
  const first = buckets[0] as Bucket;
  const last = buckets[buckets.length - 1] as Bucket;
  const from = hourText(first.start);
  const to = hourText(last.end - 1);
  // Out of the 500 units: the token and the meter (10), the named customers read by key.
  let budget = new ReadBudget((LIST_READ_UNITS - 10) * 4 * 1024);
  try {
    const named = await customerMetersOf(deps, meter, query, budget);
    if (named.units > 0) budget = new ReadBudget((LIST_READ_UNITS - 10 - named.units) * 4 * 1024);
    // Whole UTC days that fall in one bucket are read from their day aggregates (a `unique` meter's
    // values from its day values; a day of a series cut in another time zone straddles two
    // buckets: its hours are read).
    const whole = (day: string) => {
      const at = Date.parse(`${day}T00:00:00Z`);
      const i = bucketIndex(buckets, at);
      return i >= 0 && bucketIndex(buckets, at + DAY_MS - 1) === i;
    };
    // The named customers' meters are read by key for their roll-ups only when a day can be whole.
    const records =
      named.records ??
      (named.ids.length === 0 || !anyDay(from, to, whole)
        ? new Map<string, CustomerMeterRecord>()
        : await readCustomerMeters(deps.table, named.ids, budget));
    const usage = await Promise.all(
      named.ids.map((cm) =>
        readUsageBetween(deps.table, cm, from, to, meter, budget, { record: records.get(cm), whole }),
      ),
    );
    return quantitiesOf(
      meter,
      buckets,
      usage.map((u) => cellsOf(meter, buckets, u)),
      query.customer_aggregation_function,
    );
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    throw issue(
      'start_timestamp',
      `The usage of this window takes more than one request may read (${LIST_READ_UNITS} read units): shorten the window, or name customers (customer_id, external_customer_id).`,
      query.start_timestamp,
    );
  }
}

/** What Get Meter Quantities may do (shared/data/grants.ts), keyed by its `operationId`. */
export const operationAccess = (): OperationAccess => ({
  getMeterQuantities: {
    table: [
      oneStatement(tokensAccess.findToken, metersAccess.getMeter),
      ...tokensAccess.findAccessToken,
      ...customerMetersAccess.listCustomerMeterEntries,
      ...customerMetersAccess.customersByExternalId,
      ...usageEventsAccess.readCustomers,
      ...customerMetersAccess.readCustomerMeters,
      ...customerMetersAccess.readUsageBetween,
    ],
  },
});
