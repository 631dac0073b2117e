/**
 * What the customer operations share: finding a live customer of the caller's organizations by id or
 * by external id, and applying a change to it that re-decides on fresh data when it loses a race.
 */
import { getCustomer } from '../data/catalog.ts';
import {
  CustomerChanged,
  type CustomerState,
  findCustomersByExternalId,
  writeCustomerChange,
} from '../data/customers.ts';
import { outboxWrites } from '../data/outbox.ts';
import {
  AmbiguousExternalCustomerId,
  CustomerLocked,
  ResourceNotFound,
  type ValidationIssue,
} from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { Dependencies } from '../runtime.ts';
import { presentCustomer } from './presenters.ts';

/** A customer as a path names it. */
export type CustomerLocator = { id: string } | { externalId: string };

/**
 * The live customer of one of the caller's organizations the locator names. By id: one strongly
 * consistent read. By external id: the external-id range of each organization's list; naming
 * customers in several organizations is a 409. Anything else is the same 404.
 */
export async function findLiveCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  locator: CustomerLocator,
): Promise<CustomerState> {
  if ('externalId' in locator) {
    const found = await findCustomersByExternalId(deps.table, principal.organizationIds, locator.externalId);
    const [customer] = found;
    if (!customer) throw new ResourceNotFound();
    if (found.length > 1) throw new AmbiguousExternalCustomerId();
    return customer;
  }
  const customer = await getCustomer(deps.table, normalizeId(locator.id), true);
  if (
    !customer ||
    customer.deleted_at !== null ||
    !principal.organizationIds.includes(customer.organization_id)
  ) {
    throw new ResourceNotFound();
  }
  return customer;
}

/** Messages of the uniqueness rules, as the hosted service words them. */
export const TAKEN_MESSAGES = {
  email: 'A customer with this email address already exists.',
  external_id: 'A customer with this external ID already exists.',
} as const;

export const takenIssue = (field: 'email' | 'external_id', input: unknown): ValidationIssue => ({
  loc: ['body', field],
  msg: TAKEN_MESSAGES[field],
  type: 'value_error',
  input,
});

/**
 * A change's modification time: now, but always after the one read, since `modified_at` is what a
 * concurrent change is detected by (two changes in one millisecond must still differ).
 */
export function nextModifiedAt(before: CustomerState, now: Date): string {
  const previous = before.modified_at === null ? Number.NEGATIVE_INFINITY : Date.parse(before.modified_at);
  return new Date(Math.max(now.getTime(), previous + 1)).toISOString();
}

/** Attempts at a change that keeps losing the race to other changes of the same customer. */
const ATTEMPTS = 3;

/**
 * Reads the customer, decides the change (`decide` returns the customer as it should become, or the
 * customer as it is for no change) and writes it in one transaction with its event (`event`, the
 * customer as changed: `customer.updated` or `customer.deleted`); when another change won the race
 * in between, decides again on what that one wrote. A customer deleted meanwhile is then a 404; a
 * change that keeps losing is a 409 to retry. No change, no write and no event.
 */
export async function changeCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  locator: CustomerLocator,
  event: 'customer.updated' | 'customer.deleted',
  decide: (before: CustomerState, now: Date) => CustomerState,
): Promise<CustomerState> {
  for (let attempt = 1; ; attempt++) {
    const before = await findLiveCustomer(deps, principal, locator);
    const after = decide(before, deps.now());
    if (after === before) return before;
    const events = outboxWrites(
      deps.table,
      { kind: 'customer', id: after.id, organizationId: after.organization_id },
      after.modified_at as string,
      [{ type: event, data: presentCustomer(after) }],
      newId,
    );
    try {
      await writeCustomerChange(deps.table, before, after, events);
      return after;
    } catch (error) {
      if (!(error instanceof CustomerChanged)) throw error;
      if (attempt >= ATTEMPTS) throw new CustomerLocked();
    }
  }
}
