import { access as catalogAccess, getCustomersAndProducts } from '../data/catalog.ts';
import type { OperationAccess } from '../data/grants.ts';
import type { SegmentFilter } from '../data/listing.ts';
import { ListReadTooCostly, parseListSorting, ReadBudget } from '../data/listing.ts';
import type { SubscriptionRecord } from '../data/records.ts';
import {
  listSubscriptionPage,
  type SubscriptionListScope,
  type SubscriptionSortField,
  access as subscriptionsAccess,
} from '../data/subscriptions.ts';
import { subscriptionListOwners } from '../data/table.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { ListResourceSubscription, ListSubscriptionsQuery } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { pageWindow, pagination, withinAnswerLimit } from './paging.ts';
import { presentSubscription } from './presenters.ts';
import {
  pageMetersTooCostly,
  subscriptionMeters,
  access as subscriptionMetersAccess,
} from './subscription-meters.ts';
import { refuseUnsupported } from './unsupported-filters.ts';

export const DEFAULT_SUBSCRIPTION_SORTING = ['-started_at'];

/** Filters of the hosted service that no subscription list has a key for. */
const UNSUPPORTED = {
  external_customer_id: 'Filtering by external customer ID is not supported: filter by customer_id.',
  discount_id: 'Filtering by discount is not supported.',
  cancel_at_period_end: 'Filtering by cancel_at_period_end is not supported.',
  customer_cancellation_reason: 'Filtering by cancellation reason is not supported.',
  canceled_at_after: 'Filtering by cancellation date is not supported.',
  canceled_at_before: 'Filtering by cancellation date is not supported.',
  started_after: 'Filtering by start date is not supported: sort by started_at instead.',
  started_before: 'Filtering by start date is not supported: sort by started_at instead.',
  metadata: 'Filtering by metadata is not supported.',
} as const;

/** Statuses `active=true` keeps (the hosted service's "active" subscriptions); `active=false` keeps the others. */
const ACTIVE_STATUSES: readonly string[] = ['trialing', 'active', 'past_due'];

/** The segments (statuses) the `active` and `status` filters keep: both must hold. */
export function statusFilter(
  active: boolean | null | undefined,
  statuses?: readonly string[] | null,
): SegmentFilter<SubscriptionSortField> {
  return (values) => {
    const status = values.status && 'choice' in values.status ? (values.status.choice ?? '') : '';
    if (active !== undefined && active !== null && ACTIVE_STATUSES.includes(status) !== active) return false;
    return !statuses || statuses.length === 0 || statuses.includes(status);
  };
}

const distinct = (ids: readonly string[] | null | undefined) => [...new Set((ids ?? []).map(normalizeId))];

/**
 * Which lists answer the filters: the narrowest scope they name (customer and product, customer,
 * product, or the whole organization), one list per combination of the ids given, always under the
 * caller's organizations.
 */
export function subscriptionLists(
  organizationIds: readonly string[],
  customerIds: readonly string[],
  productIds: readonly string[],
): { scope: SubscriptionListScope; owners: string[] } {
  const combine = <T>(outer: readonly string[], inner: readonly T[], owner: (o: string, i: T) => string) =>
    outer.flatMap((o) => inner.map((i) => owner(o, i)));
  if (customerIds.length > 0 && productIds.length > 0) {
    const pairs = customerIds.flatMap((c) => productIds.map((p) => [c, p] as const));
    return {
      scope: 'customerProduct',
      owners: combine(organizationIds, pairs, (o, [c, p]) => subscriptionListOwners.customerProduct(o, c, p)),
    };
  }
  if (customerIds.length > 0) {
    return {
      scope: 'customer',
      owners: combine(organizationIds, customerIds, subscriptionListOwners.customer),
    };
  }
  if (productIds.length > 0) {
    return { scope: 'product', owners: combine(organizationIds, productIds, subscriptionListOwners.product) };
  }
  return { scope: 'organization', owners: [...organizationIds] };
}

/**
 * Subscriptions with the customer and product each embeds, read in one batch for the whole page,
 * and their meters (one batch of the meters, then the usage Queries side by side) within `budget`,
 * what the page's own reads left of it: past it, a 422 at `limit`.
 */
export async function presentSubscriptions(
  deps: Dependencies,
  subscriptions: readonly SubscriptionRecord[],
  budget: ReadBudget,
  limit: number | null | undefined,
) {
  if (subscriptions.length === 0) return [];
  const { customers, products } = await getCustomersAndProducts(
    deps.table,
    subscriptions.map((s) => s.customer_id),
    subscriptions.map((s) => s.product_id),
  );
  const read = subscriptions.map((subscription) => {
    const customer = customers.get(subscription.customer_id);
    const product = products.get(subscription.product_id);
    // Both are soft-deleted, never removed: a missing one is a broken table, not a client error.
    if (!customer || !product) throw new Error(`subscription ${subscription.id} refers to a missing item`);
    return { subscription, customer, product };
  });
  let meters: Awaited<ReturnType<typeof subscriptionMeters>>;
  try {
    meters = await subscriptionMeters(deps.table, read, deps.now(), budget);
  } catch (error) {
    if (error instanceof ListReadTooCostly) throw pageMetersTooCostly(limit);
    throw error;
  }
  return read.map(({ subscription, customer, product }) =>
    presentSubscription(subscription, customer, product, meters.get(subscription.id)),
  );
}

/**
 * A page of the subscriptions of the caller's organizations. Each filter names lists kept per
 * organization, customer, product, or customer and product, and `active` their status segments;
 * round trips: auth, one count Query per list, one entry Query per non-empty segment read, one batch
 * of the page's subscriptions, one of the customers and products they embed (none past the end);
 * with metered prices, one batch of their meters and one usage Query per subscription and meter,
 * side by side.
 */
export async function listSubscriptions(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListSubscriptionsQuery,
): Promise<ListResourceSubscription> {
  refuseUnsupported(query, UNSUPPORTED);
  const { offset, limit } = pageWindow(query);
  const requested = query.organization_id ? distinct(query.organization_id) : null;
  const organizations = principal.organizationIds.filter((id) => !requested || requested.includes(id));
  const { scope, owners } = subscriptionLists(
    organizations,
    distinct(query.customer_id),
    distinct(query.product_id),
  );
  // One read budget for the request: the page's entries and records, then its meters' usage.
  const budget = new ReadBudget();
  const page = await listSubscriptionPage(
    deps.table,
    scope,
    owners,
    parseListSorting<SubscriptionSortField>(query.sorting, DEFAULT_SUBSCRIPTION_SORTING),
    offset,
    limit,
    statusFilter(query.active, query.status),
    budget,
  );
  return withinAnswerLimit({
    items: await presentSubscriptions(deps, page.items, budget, query.limit),
    pagination: pagination(page.total, { offset, limit }),
  });
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  listSubscriptions: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...subscriptionsAccess.listSubscriptionPage,
      // One batch of the customers and products the page embeds.
      ...catalogAccess.getCustomersAndProducts,
      // The page's meters (one batch), then each subscription's usage per meter (Queries side by side).
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
});
