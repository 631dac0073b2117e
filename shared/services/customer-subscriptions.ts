/**
 * The customer portal's subscriptions: a customer session lists, reads, cancels and uncancels its
 * own customer's subscriptions. Another customer's subscription, of any organization, is the same
 * 404 as an unknown id; a deleted customer's session stops working at once (401).
 */
import {
  access as catalogAccess,
  getProduct,
  type PortalContext,
  readPortalContext,
} from '../data/catalog.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { ListReadTooCostly, parseListSorting, ReadBudget } from '../data/listing.ts';
import { access as outboxAccess } from '../data/outbox.ts';
import type { OrganizationRecord, SubscriptionRecord } from '../data/records.ts';
import {
  listSubscriptionPage,
  type SubscriptionSortField,
  access as subscriptionsAccess,
  updateSubscriptionLifecycle,
} from '../data/subscriptions.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { InvalidToken, ResourceNotFound } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { CustomerPrincipal } from '../domain/principals.ts';
import { applyCustomerChange, type CustomerChange } from '../domain/subscription-lifecycle.ts';
import type {
  CustomerSubscription,
  ListCustomerSubscriptionsQuery,
  ListResourceCustomerSubscription,
  UpdateCustomerSubscriptionBody,
} from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { DEFAULT_SUBSCRIPTION_SORTING, statusFilter, subscriptionLists } from './list-subscriptions.ts';
import { pageWindow, pagination, withinAnswerLimit } from './paging.ts';
import { presentCustomerSubscription, presentSubscription } from './presenters.ts';
import {
  oneSubscriptionMeters,
  pageMetersTooCostly,
  subscriptionMeters,
  access as subscriptionMetersAccess,
} from './subscription-meters.ts';
import { refuseUnsupported } from './unsupported-filters.ts';
import { lifecycleOutbox, retryLostRace } from './update-subscription.ts';

/** The session's customer, still live in its organization, and that organization; else the token is dead. */
function sessionOrganization(principal: CustomerPrincipal, context: PortalContext): OrganizationRecord {
  const { customer, organization } = context;
  if (!customer || customer.deleted_at !== null || customer.organization_id !== principal.organizationId) {
    throw new InvalidToken();
  }
  if (!organization) throw new Error(`customer ${customer.id} belongs to a missing organization`);
  return organization;
}

/** The subscription, if it is the session customer's; anything else is the 404 of an unknown id. */
function theirs(
  principal: CustomerPrincipal,
  subscription: SubscriptionRecord | undefined,
): SubscriptionRecord {
  if (
    !subscription ||
    subscription.customer_id !== principal.customerId ||
    subscription.organization_id !== principal.organizationId
  ) {
    throw new ResourceNotFound();
  }
  return subscription;
}

/**
 * A page of the customer's subscriptions, from the customer's list (or its lists per product when
 * `product_id` filters). Round trips: auth, the count Query of each list, one Query per segment
 * read, one batch of the customer, its organization and the page's products (always, so that a
 * deleted customer's session is refused even for an empty page).
 */
export async function listCustomerSubscriptions(
  deps: Dependencies,
  principal: CustomerPrincipal,
  query: ListCustomerSubscriptionsQuery,
): Promise<ListResourceCustomerSubscription> {
  refuseUnsupported(query, {
    query: 'Searching subscriptions by product or organization name is not supported.',
  });
  const { offset, limit } = pageWindow(query);
  const { scope, owners } = subscriptionLists(
    [principal.organizationId],
    [principal.customerId],
    [...new Set((query.product_id ?? []).map(normalizeId))],
  );
  // Every subscription of a customer is of one organization: sorting by it orders nothing.
  const criteria = parseListSorting<SubscriptionSortField | 'organization'>(
    query.sorting,
    DEFAULT_SUBSCRIPTION_SORTING,
  ).filter((c): c is { field: SubscriptionSortField; descending: boolean } => c.field !== 'organization');
  // One read budget for the request: the page's entries and records, then its meters' usage.
  const budget = new ReadBudget();
  const page = await listSubscriptionPage(
    deps.table,
    scope,
    owners,
    criteria,
    offset,
    limit,
    statusFilter(query.active),
    budget,
  );
  const context = await readPortalContext(deps.table, principal.customerId, principal.organizationId, {
    productIds: page.items.map((s) => s.product_id),
  });
  const organization = sessionOrganization(principal, context);
  const read = page.items.map((subscription) => {
    const product = context.products.get(subscription.product_id);
    if (!product) throw new Error(`subscription ${subscription.id} refers to a missing product`);
    return { subscription, product };
  });
  let meters: Awaited<ReturnType<typeof subscriptionMeters>>;
  try {
    meters = await subscriptionMeters(deps.table, read, deps.now(), budget);
  } catch (error) {
    if (error instanceof ListReadTooCostly) throw pageMetersTooCostly(query.limit);
    throw error;
  }
  return withinAnswerLimit({
    items: read.map(({ subscription, product }) =>
      presentCustomerSubscription(subscription, product, organization, meters.get(subscription.id)),
    ),
    pagination: pagination(page.total, { offset, limit }),
  });
}

/**
 * One of the customer's subscriptions. Round trips: auth, the customer, organization and subscription,
 * the product: 3; with metered prices, + the meters' batch and one usage Query per meter (side by side).
 */
export async function getCustomerSubscription(
  deps: Dependencies,
  principal: CustomerPrincipal,
  id: string,
): Promise<CustomerSubscription> {
  const context = await readPortalContext(deps.table, principal.customerId, principal.organizationId, {
    subscriptionId: normalizeId(id),
  });
  const organization = sessionOrganization(principal, context);
  const subscription = theirs(principal, context.subscription);
  const product = await getProduct(deps.table, subscription.product_id);
  if (!product) throw new Error(`subscription ${subscription.id} refers to a missing product`);
  const meters = await oneSubscriptionMeters(deps.table, subscription, product, deps.now());
  return presentCustomerSubscription(subscription, product, organization, meters);
}

/** The change a portal PATCH body asks for. */
export function customerChangeOf(body: UpdateCustomerSubscriptionBody): CustomerChange {
  return body.cancel_at_period_end
    ? { kind: 'cancel', reason: body.cancellation_reason ?? null, comment: body.cancellation_comment ?? null }
    : { kind: 'uncancel' };
}

/**
 * Cancels (at period end) or uncancels one of the customer's subscriptions, with the portal's
 * stricter transitions (`applyCustomerChange`); a refused change writes nothing. Round trips: auth,
 * the customer, organization and subscription, the product, the conditional write with its
 * relisting and its webhook events (`subscription.updated`, then `canceled` or `uncanceled`): 4;
 * with metered prices, + the meters' batch and the usage Queries, before the write (its answer and
 * its events carry Get's `meters`: `oneSubscriptionMeters`).
 */
export function changeCustomerSubscription(
  deps: Dependencies,
  principal: CustomerPrincipal,
  id: string,
  change: CustomerChange,
): Promise<CustomerSubscription> {
  return retryLostRace(async () => {
    const context = await readPortalContext(deps.table, principal.customerId, principal.organizationId, {
      subscriptionId: normalizeId(id),
    });
    const organization = sessionOrganization(principal, context);
    const before = theirs(principal, context.subscription);
    const at = deps.now();
    const now = at.toISOString();
    const fields = applyCustomerChange(before, change, now);
    const product = await getProduct(deps.table, before.product_id);
    if (!product) throw new Error(`subscription ${before.id} refers to a missing product`);
    const customer = context.customer;
    if (!customer) throw new Error(`subscription ${before.id} of a session without its customer`);
    const meters = await oneSubscriptionMeters(deps.table, { ...before, ...fields }, product, at);
    const after = await updateSubscriptionLifecycle(deps.table, before, fields, now, (written) =>
      lifecycleOutbox(deps, before, written, presentSubscription(written, customer, product, meters), now),
    );
    return presentCustomerSubscription(after, product, organization, meters);
  });
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  listCustomerSubscriptions: {
    table: [
      ...tokensAccess.findToken,
      ...subscriptionsAccess.listCustomerSubscriptionPage,
      ...catalogAccess.readPortalContextOfProducts,
      // The page's meters (one batch), then each subscription's usage per meter (Queries side by side).
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
  getCustomerSubscription: {
    table: [
      // The token and the product it embeds; one batch of the customer, its organization and the subscription.
      oneStatement(tokensAccess.findToken, catalogAccess.getProduct),
      ...catalogAccess.readPortalContextOfSubscription,
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
  cancelCustomerSubscription: {
    table: [
      oneStatement(tokensAccess.findToken, catalogAccess.getProduct),
      ...catalogAccess.readPortalContextOfSubscription,
      ...subscriptionsAccess.updateSubscriptionInPlace,
      ...outboxAccess.outboxWrites,
      // With metered prices, their meters and usage, read before the write (its answer and events).
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
  updateCustomerSubscription: {
    table: [
      oneStatement(tokensAccess.findToken, catalogAccess.getProduct),
      ...catalogAccess.readPortalContextOfSubscription,
      ...subscriptionsAccess.updateSubscriptionInPlace,
      ...outboxAccess.outboxWrites,
      // With metered prices, their meters and usage, read before the write (its answer and events).
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
});
