/**
 * Get / List Customer Meters: the customer meters the meter aggregator keeps
 * (`shared/services/meter-aggregation.ts`, `shared/data/customer-meters.ts`), with their totals
 * folded when read.
 *
 * **Totals.** `consumed_units` is the meter's aggregation over every hour aggregate the customer
 * meter has stored (all time: the hosted service counts since the latest `meter.reset`, and there
 * are no resets yet), merged with `mergeStates` and read with `quantityOf` (`shared/domain/meter.ts`),
 * so it equals a plain fold over the distinct events; for `unique`, the number of distinct values
 * over all its `VALUE#` items. `credited_units` is 0 (meter credits do not exist yet), `balance` =
 * credited − consumed. `modified_at` is null: the object is never modified, its totals are derived.
 *
 * **Bounded.** A request reads at most `LIST_READ_UNITS` (500) read units (`ReadBudget`): an hour
 * aggregate is about 0.5 KB, so one customer meter folds about 4,000 hours with usage within a
 * request (about 165 days of usage every hour; sparser usage lasts longer). Past that, Get answers
 * 503 and a list page 422 at `limit` (docs/data-model.md "Customer meters": the closed-hours roll-up
 * that removes the bound is not built yet).
 */
import {
  type CustomerMeterRecord,
  customerMeterId,
  access as customerMetersAccess,
  customersByExternalId,
  listCustomerMeterEntries,
  organizationMeters,
  getCustomerMeter as readCustomerMeter,
  readCustomerMeters,
  readOwners,
  readUsage,
} from '../data/customer-meters.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { LIST_READ_UNITS, ListReadTooCostly, ReadBudget } from '../data/listing.ts';
import type { MeterRecord } from '../data/meters.ts';
import type { CustomerRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { readCustomers, access as usageEventsAccess } from '../data/usage-events.ts';
import { PolarRequestValidationError, ResourceNotFound, ServiceUnavailable } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import { emptyState, type FoldState, mergeStates, quantityOf } from '../domain/meter.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type {
  CustomerMeter,
  ListCustomerMetersQuery,
  ListResourceCustomerMeter,
} from '../generated/api-types.ts';
import { logError } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { presentMeter } from './meters.ts';
import { pageWindow, pagination, queryIssue, withinAnswerLimit } from './paging.ts';
import { presentCustomer } from './presenters.ts';

/** Customer meters one list request may consider: read from a list, or named by (customer, meter) pairs. */
export const MAX_CUSTOMER_METERS = 1000;

/** A customer meter's totals from what it stored (see above). */
export function totalsOf(
  meter: MeterRecord,
  usage: { rollup?: FoldState; hours: { state: FoldState }[]; values: ReadonlySet<string> },
): { consumed_units: number; credited_units: number; balance: number } {
  const state =
    meter.aggregation.func === 'unique'
      ? ({ func: 'unique', values: [...usage.values] } as FoldState)
      : usage.hours.reduce(
          (sum, hour) => mergeStates(sum, hour.state),
          usage.rollup ?? emptyState(meter.aggregation),
        );
  const consumed = quantityOf(state);
  const credited = 0;
  return { consumed_units: consumed, credited_units: credited, balance: credited - consumed };
}

async function present(
  deps: Dependencies,
  record: CustomerMeterRecord,
  customer: CustomerRecord,
  meter: MeterRecord,
  budget: ReadBudget,
): Promise<CustomerMeter> {
  const usage = await readUsage(deps.table, record, meter, budget);
  return {
    id: record.id,
    created_at: record.created_at,
    modified_at: null,
    customer_id: record.customer_id,
    meter_id: record.meter_id,
    ...totalsOf(meter, usage),
    customer: presentCustomer(customer),
    meter: presentMeter(meter),
  } as CustomerMeter;
}

export async function getCustomerMeter(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<CustomerMeter> {
  const record = await readCustomerMeter(deps.table, normalizeId(id));
  if (!record || !principal.organizationIds.includes(record.organization_id)) throw new ResourceNotFound();
  const { customer, meter } = await readOwners(deps.table, record);
  if (!meter || !customer) throw new ResourceNotFound();
  try {
    return await present(deps, record, customer, meter, new ReadBudget());
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    // Past the read bound (see above): an exact answer or none.
    logError('customer meter over the read bound', { customer_meter_id: record.id });
    throw new ServiceUnavailable();
  }
}

/** Sorting fields served (the rest would fold every customer meter's totals to order them). */
const SERVED_SORTING = ['created_at', 'modified_at', 'customer_id', 'meter_id', 'meter_name'] as const;
type ServedField = (typeof SERVED_SORTING)[number];

/**
 * The `sorting` of a customer-meter list as criteria, among the fields `served` (a subset of
 * `SERVED_SORTING`: the portal has no `customer_id`); any other is a 422 at `sorting`.
 */
export function customerMeterCriteria<F extends ServedField>(
  sorting: readonly string[] | null | undefined,
  served: readonly F[],
): { field: F; descending: boolean }[] {
  const given = sorting && sorting.length > 0 ? sorting : ['-modified_at'];
  const refused = given.filter((s) => !(served as readonly string[]).includes(s.replace(/^-/, '')));
  if (refused.length > 0) {
    throw new PolarRequestValidationError([
      queryIssue(
        'sorting',
        `Sorting by ${refused.join(', ')} is not supported by this API: it would read every customer meter's totals. Sort by ${served.join(', ')}.`,
        sorting,
      ),
    ]);
  }
  const seen = new Set<string>();
  return given.flatMap((s) => {
    const field = s.replace(/^-/, '') as F;
    if (seen.has(field)) return [];
    seen.add(field);
    return [{ field, descending: s.startsWith('-') }];
  });
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The order of customer-meter list criteria, then newest first, then id. */
export function customerMeterComparator(
  criteria: readonly { field: ServedField; descending: boolean }[],
  meters: ReadonlyMap<string, MeterRecord>,
) {
  const value = (record: CustomerMeterRecord, field: ServedField): string => {
    switch (field) {
      case 'created_at':
        return new Date(record.created_at).toISOString();
      case 'modified_at':
        return ''; // null on every customer meter: orders nothing
      case 'customer_id':
        return record.customer_id;
      case 'meter_id':
        return record.meter_id;
      case 'meter_name':
        return (meters.get(record.meter_id)?.name ?? '').toLowerCase();
    }
  };
  // Tie-breaks: newest first (the hosted service's default order puts the latest change first), then id.
  const all = [...criteria, { field: 'created_at' as const, descending: true }];
  return (a: CustomerMeterRecord, b: CustomerMeterRecord): number => {
    for (const { field, descending } of all) {
      const diff = compareText(value(a, field), value(b, field));
      if (diff !== 0) return descending ? -diff : diff;
    }
    return compareText(a.id, b.id);
  };
}

const tooMany = (parameter: string, msg: string, input: unknown) =>
  new PolarRequestValidationError([queryIssue(parameter, msg, input)]);

/** Customers one list may name (`customer_id` and `external_customer_id` values together). */
export const MAX_NAMED_CUSTOMERS = 50;
/** (customer, meter) pairs one list may read by key (each named customer with each of its organization's meters). */
export const MAX_NAMED_PAIRS = 200;

/**
 * The customer meters of the named customers, read by key: each named customer of the caller's
 * organizations with each of its organization's meters kept. Also the read units spent (every item
 * read by key is under 4 KB: one unit each), which the page's usage reads leave to the rest.
 */
async function byKey(
  deps: Dependencies,
  organizationIds: readonly string[],
  query: ListCustomerMetersQuery,
  meters: ReadonlyMap<string, MeterRecord>,
): Promise<{ records: CustomerMeterRecord[]; units: number }> {
  const customerIds = [...new Set((query.customer_id ?? []).map(normalizeId))];
  const externalIds = [...new Set(query.external_customer_id ?? [])];
  const parameter = customerIds.length > 0 ? 'customer_id' : 'external_customer_id';
  const input = customerIds.length > 0 ? query.customer_id : query.external_customer_id;
  if (customerIds.length + externalIds.length > MAX_NAMED_CUSTOMERS) {
    throw tooMany(parameter, `At most ${MAX_NAMED_CUSTOMERS} customers can be named in one list.`, input);
  }
  let units = 0;
  const named = new Map<string, Set<string>>(organizationIds.map((org) => [org, new Set<string>()]));
  if (customerIds.length > 0) {
    units += customerIds.length;
    // Only customers of the caller's organizations count (another's contributes nothing).
    for (const customer of (await readCustomers(deps.table, customerIds)).values()) {
      named.get(customer.organization_id)?.add(customer.id);
    }
  }
  if (externalIds.length > 0) {
    units += externalIds.length * organizationIds.length;
    for (const org of organizationIds) {
      for (const id of (await customersByExternalId(deps.table, org, externalIds)).values()) {
        named.get(org)?.add(id);
      }
    }
  }
  const ids = [...named.entries()].flatMap(([org, customers]) =>
    [...customers].flatMap((customer) =>
      [...meters.values()]
        .filter((meter) => meter.organization_id === org)
        .map((meter) => customerMeterId(customer, meter.id)),
    ),
  );
  if (ids.length > MAX_NAMED_PAIRS) {
    throw tooMany(
      parameter,
      `These customers and their organizations' meters make more than ${MAX_NAMED_PAIRS} customer meters to read: name fewer customers or give meter_id.`,
      input,
    );
  }
  units += ids.length;
  return { records: [...(await readCustomerMeters(deps.table, ids)).values()], units };
}

/** The organizations' lists of customer meters (`GSI1`), at most `MAX_CUSTOMER_METERS` in all. */
async function fromLists(
  deps: Dependencies,
  organizationIds: readonly string[],
  budget: ReadBudget,
): Promise<CustomerMeterRecord[]> {
  const lists = await Promise.all(
    organizationIds.map((org) => listCustomerMeterEntries(deps.table, org, MAX_CUSTOMER_METERS, budget)),
  );
  const all = lists.flatMap((list) => list.items);
  if (lists.some((list) => list.more) || all.length > MAX_CUSTOMER_METERS) {
    throw tooMany(
      'customer_id',
      `These organizations have more than ${MAX_CUSTOMER_METERS} customer meters: filter by customer_id or external_customer_id (or name fewer organizations).`,
      null,
    );
  }
  return all;
}

export async function listCustomerMeters(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListCustomerMetersQuery,
): Promise<ListResourceCustomerMeter> {
  const window = pageWindow(query);
  const criteria = customerMeterCriteria(query.sorting, SERVED_SORTING);
  const requested = query.organization_id?.map(normalizeId);
  const organizationIds = principal.organizationIds.filter((id) => !requested || requested.includes(id));
  const meterFilter = query.meter_id ? new Set(query.meter_id.map(normalizeId)) : undefined;
  // Out of the 500 units before the Queries: the page's customers (one unit each), the token and the
  // organizations' meter entries (10), and with a customer filter the reads by key.
  const base = LIST_READ_UNITS - window.limit - 10;
  const named = (query.customer_id?.length ?? 0) + (query.external_customer_id?.length ?? 0) > 0;
  try {
    const meters = new Map<string, MeterRecord>();
    for (const list of await Promise.all(organizationIds.map((org) => organizationMeters(deps.table, org)))) {
      for (const meter of list) {
        // Without meter_id, archived meters are left out (as the hosted service); with it, only those.
        if (meterFilter ? meterFilter.has(meter.id) : meter.archived_at === null) meters.set(meter.id, meter);
      }
    }
    let budget = new ReadBudget(base * 4 * 1024);
    let records: CustomerMeterRecord[];
    if (named) {
      const read = await byKey(deps, organizationIds, query, meters);
      budget = new ReadBudget(Math.max(0, base - read.units) * 4 * 1024);
      records = read.records;
    } else {
      records = await fromLists(deps, organizationIds, budget);
    }
    const kept = records.filter(
      (record) => organizationIds.includes(record.organization_id) && meters.has(record.meter_id),
    );
    kept.sort(customerMeterComparator(criteria, meters));
    const page = kept.slice(window.offset, window.offset + window.limit);
    const customers = await readCustomers(
      deps.table,
      page.map((record) => record.customer_id),
    );
    const items = await Promise.all(
      page.flatMap((record) => {
        const customer = customers.get(record.customer_id);
        const meter = meters.get(record.meter_id);
        return customer && meter ? [present(deps, record, customer, meter, budget)] : [];
      }),
    );
    return withinAnswerLimit({ items, pagination: pagination(kept.length, window) });
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    throw tooMany(
      'limit',
      `The customer meters of this page hold more usage hours than one request may read (${LIST_READ_UNITS} read units): use a smaller limit or filter by customer_id.`,
      query.limit ?? null,
    );
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getCustomerMeter: {
    table: [
      oneStatement(tokensAccess.findToken, customerMetersAccess.getCustomerMeter),
      ...tokensAccess.findAccessToken,
      ...customerMetersAccess.readOwners,
      ...customerMetersAccess.readUsage,
    ],
  },
  listCustomerMeters: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...customerMetersAccess.organizationMeters,
      ...customerMetersAccess.listCustomerMeterEntries,
      ...customerMetersAccess.customersByExternalId,
      ...customerMetersAccess.readCustomerMeters,
      ...usageEventsAccess.readCustomers,
      ...customerMetersAccess.readUsage,
    ],
  },
});
