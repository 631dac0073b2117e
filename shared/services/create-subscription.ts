import { access as catalogAccess, getSubscriptionInputs } from '../data/catalog.ts';
import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { outboxWrites } from '../data/outbox.ts';
import type { CustomerRecord, ProductRecord, SubscriptionRecord } from '../data/records.ts';
import {
  insertSubscription,
  sharedSegmentKeys,
  access as subscriptionsAccess,
} from '../data/subscriptions.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import {
  ConditionFailed,
  PolarRequestValidationError,
  ServiceUnavailable,
  type ValidationIssue,
} from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import { addInterval } from '../domain/period.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import { LIVE } from '../domain/subscription-lifecycle.ts';
import type { CreateSubscriptionBody, Subscription } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { DEFAULT_CURRENCY } from './organizations.ts';
import { presentSubscription } from './presenters.ts';
import { oneSubscriptionMeters, access as subscriptionMetersAccess } from './subscription-meters.ts';

const productIssue = (msg: string, input: string): ValidationIssue => ({
  loc: ['body', 'product_id'],
  msg,
  type: 'value_error',
  input,
});

/** The contract's rules, in its order; the first that fails is the answer. */
function qualify(
  principal: UserPrincipal,
  body: CreateSubscriptionBody,
  product: ProductRecord | undefined,
  customer: CustomerRecord | undefined,
): { product: ProductRecord; customer: CustomerRecord } {
  const fail = (issue: ValidationIssue): never => {
    throw new PolarRequestValidationError([issue]);
  };
  if (
    !product ||
    product.deleted_at !== null ||
    !principal.organizationIds.includes(product.organization_id)
  ) {
    return fail(productIssue('Product does not exist.', body.product_id));
  }
  if (product.recurring_interval === null || product.recurring_interval_count === null) {
    return fail(productIssue('Product is not a recurring product.', body.product_id));
  }
  if (product.is_archived) return fail(productIssue('Product is archived.', body.product_id));
  // Free: every live fixed price is 0. Metered prices are allowed beside it (the hosted service
  // subscribes to such a product and bills the usage later); their usage shows in `meters`, and no
  // charge is made for it (docs/compatibility.md "Meters and metered prices").
  const live = product.prices.filter((price) => !price.is_archived);
  const free =
    live.some((price) => price.amount_type === 'fixed') &&
    live.every((price) => price.amount_type === 'metered_unit' || price.price_amount === 0);
  if (!free) {
    return fail(
      productIssue(
        'Product is not free. The customer should go through a checkout to create a paid subscription.',
        body.product_id,
      ),
    );
  }
  if (!customer || customer.deleted_at !== null || customer.organization_id !== product.organization_id) {
    return fail({
      loc: ['body', 'customer_id'],
      msg: 'Customer does not exist.',
      type: 'value_error',
      input: body.customer_id,
    });
  }
  return { product, customer };
}

/**
 * Reads product, customer and the caller's organizations in one batch (strongly consistent), checks the
 * rules, then writes in a transaction that re-checks the customer (with the subscription's webhook
 * events); if the customer changed in between, the rules are evaluated once more on fresh data so the
 * answer names what changed. The product is not re-checked in the transaction (every signup to it would
 * hold its item and concurrent signups would conflict): a create whose read saw the product live and
 * not archived is ordered before an archive or delete that lands meanwhile (`insertSubscription`).
 */
export async function createSubscription(
  deps: Dependencies,
  principal: UserPrincipal,
  body: CreateSubscriptionBody,
): Promise<Subscription> {
  const request = {
    ...body,
    product_id: normalizeId(body.product_id),
    customer_id: normalizeId(body.customer_id),
  };
  for (let attempt = 0; ; attempt++) {
    // The new id first: it chooses the shards of the organization's and the product's lists.
    const id = newId();
    // The segment registry items a new (active, free) subscription needs, read with the product.
    const registry = principal.organizationIds.flatMap((organizationId) =>
      sharedSegmentKeys({
        id,
        list_layout: 'sharded',
        organization_id: organizationId,
        customer_id: request.customer_id,
        product_id: request.product_id,
        status: LIVE.status,
        amount: 0,
      }),
    );
    const read = await getSubscriptionInputs(
      deps.table,
      request.product_id,
      request.customer_id,
      principal.organizationIds,
      registry,
    );
    const { product, customer } = qualify(principal, request, read.product, read.customer);
    const interval = product.recurring_interval as NonNullable<ProductRecord['recurring_interval']>;
    const count = product.recurring_interval_count as number;
    const now = deps.now();
    const start = now.toISOString();
    const currency = read.organizations.get(product.organization_id)?.default_currency ?? DEFAULT_CURRENCY;
    const subscription: SubscriptionRecord = {
      id,
      organization_id: product.organization_id,
      created_at: start,
      modified_at: null,
      amount: 0,
      currency,
      recurring_interval: interval,
      recurring_interval_count: count,
      ...LIVE,
      current_period_start: start,
      current_period_end: addInterval(now, interval, count).toISOString(),
      started_at: start,
      customer_id: customer.id,
      product_id: product.id,
      price_ids: product.prices
        .filter((p) => !p.is_archived && p.price_currency === currency)
        .map((p) => p.id),
      metadata: (request.metadata ?? {}) as SubscriptionRecord['metadata'],
      created_by_user_id: principal.userId,
    };
    // Its meters as Get would answer them now (usage of this hour counts), read before the
    // transaction: none and no read without a metered price; past the read bound a 503, unwritten.
    const meters = await oneSubscriptionMeters(deps.table, subscription, product, now);
    // Created free, so active at once: the hosted service's three events, in its order.
    const presented = presentSubscription(subscription, customer, product, meters);
    const subject = {
      kind: 'subscription',
      id: subscription.id,
      organizationId: subscription.organization_id,
    } as const;
    const events = (['subscription.created', 'subscription.active', 'subscription.updated'] as const).map(
      (type) => ({ type, data: presented }),
    );
    try {
      await insertSubscription(
        deps.table,
        subscription,
        outboxWrites(deps.table, subject, start, events, newId),
        read.present,
      );
      countBusinessEvent('SubscriptionsCreated');
      return presented;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      // The rules passed on fresh data twice and the write was refused twice: the customer is
      // changing under us right now. Nothing was written; the client may retry.
      if (attempt > 0) throw new ServiceUnavailable();
    }
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createSubscription: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...idempotencyAccess.idempotencyLargeAnswer,
      ...catalogAccess.getSubscriptionInputs,
      ...subscriptionsAccess.insertSubscription,
      // With metered prices, their meters (one batch) and usage (a Query each), before the write.
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
});
