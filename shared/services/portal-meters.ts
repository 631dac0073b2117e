/**
 * The customer portal's meters: List / Get the session customer's customer meters
 * (`/v1/customer-portal/meters/`), with the totals Get / List Customer Meters fold
 * (`shared/services/customer-meters.ts` `totalsOf`, over `readUsage`), within the same bound of
 * `LIST_READ_UNITS` (500) read units per request.
 *
 * **What a session sees.** Only its own customer's customer meters of its organization: a customer
 * meter's id is derived from (customer, meter), so the list names them by key, one per meter of the
 * organization kept by the filters; Get reads the customer meter with the customer and answers 404
 * for one of another customer (of this organization or another) as for an unknown id. **Archived
 * meters are left out everywhere**, with or without `meter_id`, and Get answers 404 for one: as the
 * hosted service's portal (its readable statement has `Meter.archived_at IS NULL`), unlike the
 * organization's List Customer Meters, which keeps them when `meter_id` names them.
 *
 * **Bounded.** At most `MAX_PORTAL_METERS` (200) meters kept by the filters (one key each, more is a
 * 422 at `meter_id`); the page's usage Queries share what the batch read left of the 500 units: Get
 * past it answers 503, a page 422 at `limit`. Sorting by the totals is refused (422): it would fold
 * every customer meter, not only the page's.
 */
import {
  type CustomerMeterRecord,
  customerMeterId,
  access as customerMetersAccess,
  organizationMeters,
  readUsage,
} from '../data/customer-meters.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { LIST_READ_UNITS, ListReadTooCostly, ReadBudget } from '../data/listing.ts';
import { getMeter, type MeterRecord, access as metersAccess } from '../data/meters.ts';
import { access as portalMetersAccess, readCustomerWithCustomerMeters } from '../data/portal-meters.ts';
import type { CustomerRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import {
  InvalidToken,
  PolarRequestValidationError,
  ResourceNotFound,
  ServiceUnavailable,
} from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { CustomerPrincipal } from '../domain/principals.ts';
import type {
  CustomerCustomerMeter,
  ListPortalMetersQuery,
  ListResourceCustomerCustomerMeter,
} from '../generated/api-types.ts';
import { logError } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { customerMeterComparator, customerMeterCriteria, totalsOf } from './customer-meters.ts';
import { pageWindow, pagination, queryIssue, withinAnswerLimit } from './paging.ts';

/** Meters (so customer meters, one key each) one list may read for its customer. */
export const MAX_PORTAL_METERS = 200;

/** Read units reserved before the usage Queries: the token, the organization's meter entries. */
const RESERVED_UNITS = 10;

/** A session outlives nothing: a deleted customer's (or another organization's) token stops working. */
function liveCustomer(principal: CustomerPrincipal, customer: CustomerRecord | undefined): CustomerRecord {
  if (!customer || customer.deleted_at !== null || customer.organization_id !== principal.organizationId) {
    throw new InvalidToken();
  }
  return customer;
}

/** Whether a customer meter is the session customer's, in its organization. */
const owned = (principal: CustomerPrincipal, record: CustomerMeterRecord): boolean =>
  record.customer_id === principal.customerId && record.organization_id === principal.organizationId;

/** Whether a meter may be shown to the session: its organization's, not archived. */
const visible = (principal: CustomerPrincipal, meter: MeterRecord | undefined): meter is MeterRecord =>
  meter !== undefined && meter.organization_id === principal.organizationId && meter.archived_at === null;

async function present(
  deps: Dependencies,
  record: CustomerMeterRecord,
  meter: MeterRecord,
  budget: ReadBudget,
): Promise<CustomerCustomerMeter> {
  const usage = await readUsage(deps.table, record, meter, budget);
  return {
    id: record.id,
    created_at: record.created_at,
    modified_at: null,
    customer_id: record.customer_id,
    meter_id: record.meter_id,
    ...totalsOf(meter, usage),
    meter: { created_at: meter.created_at, modified_at: meter.modified_at, id: meter.id, name: meter.name },
  };
}

export async function getPortalMeter(
  deps: Dependencies,
  principal: CustomerPrincipal,
  id: string,
): Promise<CustomerCustomerMeter> {
  const wanted = normalizeId(id);
  const { customer, customerMeters } = await readCustomerWithCustomerMeters(
    deps.table,
    principal.customerId,
    [wanted],
  );
  liveCustomer(principal, customer);
  const record = customerMeters.get(wanted);
  if (!record || !owned(principal, record)) throw new ResourceNotFound();
  const meter = await getMeter(deps.table, record.meter_id);
  if (!visible(principal, meter)) throw new ResourceNotFound();
  try {
    return await present(deps, record, meter, new ReadBudget());
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    // Past the read bound: an exact answer or none (as Get Customer Meter).
    logError('customer meter over the read bound', { customer_meter_id: record.id });
    throw new ServiceUnavailable();
  }
}

/** Sorting fields served: List Customer Meters' but `customer_id` (one customer here). */
const SERVED_SORTING = ['created_at', 'modified_at', 'meter_id', 'meter_name'] as const;

export async function listPortalMeters(
  deps: Dependencies,
  principal: CustomerPrincipal,
  query: ListPortalMetersQuery,
): Promise<ListResourceCustomerCustomerMeter> {
  const window = pageWindow(query);
  const criteria = customerMeterCriteria(query.sorting, SERVED_SORTING);
  const meterFilter = query.meter_id ? new Set(query.meter_id.map(normalizeId)) : undefined;
  const text = query.query?.toLowerCase();
  const meters = new Map<string, MeterRecord>();
  for (const meter of await organizationMeters(deps.table, principal.organizationId)) {
    if (!visible(principal, meter)) continue;
    if (meterFilter && !meterFilter.has(meter.id)) continue;
    if (text !== undefined && !meter.name.toLowerCase().includes(text)) continue;
    meters.set(meter.id, meter);
  }
  if (meters.size > MAX_PORTAL_METERS) {
    // The customer is read anyway: a deleted customer's session is a 401 here too, not this 422.
    liveCustomer(
      principal,
      (await readCustomerWithCustomerMeters(deps.table, principal.customerId, [])).customer,
    );
    throw new PolarRequestValidationError([
      queryIssue(
        'meter_id',
        `More than ${MAX_PORTAL_METERS} meters of this organization match: name the meters (meter_id) or filter by their name (query).`,
        query.meter_id ?? null,
      ),
    ]);
  }
  const { customer, customerMeters } = await readCustomerWithCustomerMeters(
    deps.table,
    principal.customerId,
    [...meters.keys()].map((meterId) => customerMeterId(principal.customerId, meterId)),
  );
  liveCustomer(principal, customer);
  // Every key read by the batch is under 4 KB: one unit each, taken before the usage Queries.
  const budget = new ReadBudget(Math.max(0, LIST_READ_UNITS - RESERVED_UNITS - 1 - meters.size) * 4 * 1024);
  const kept = [...customerMeters.values()].filter(
    (record) => owned(principal, record) && meters.has(record.meter_id),
  );
  kept.sort(customerMeterComparator(criteria, meters));
  const page = kept.slice(window.offset, window.offset + window.limit);
  try {
    const items = await Promise.all(
      page.map((record) => present(deps, record, meters.get(record.meter_id) as MeterRecord, budget)),
    );
    return withinAnswerLimit({ items, pagination: pagination(kept.length, window) });
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    throw new PolarRequestValidationError([
      queryIssue(
        'limit',
        `The meters of this page hold more usage hours than one request may read (${LIST_READ_UNITS} read units): use a smaller limit.`,
        query.limit ?? null,
      ),
    ]);
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getPortalMeter: {
    table: [
      oneStatement(tokensAccess.findToken, metersAccess.getMeter),
      ...portalMetersAccess.readCustomerWithCustomerMeters,
      ...customerMetersAccess.readUsage,
    ],
  },
  listPortalMeters: {
    table: [
      ...tokensAccess.findToken,
      ...customerMetersAccess.organizationMeters,
      ...portalMetersAccess.readCustomerWithCustomerMeters,
      ...customerMetersAccess.readUsage,
    ],
  },
});
