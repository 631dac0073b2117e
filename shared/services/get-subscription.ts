import { access as catalogAccess, getCustomerAndProduct } from '../data/catalog.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { getSubscription as readSubscription, access as subscriptionsAccess } from '../data/subscriptions.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { ResourceNotFound } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { Subscription } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { presentSubscription } from './presenters.ts';
import { oneSubscriptionMeters, access as subscriptionMetersAccess } from './subscription-meters.ts';

/**
 * A subscription of one of the caller's organizations, with the customer and product it embeds as
 * they are now (a deleted customer or product still shows, with its `deleted_at`, as the hosted
 * service shows it). Another organization's subscription is the same 404 as an unknown id. Its
 * `meters`: the usage of its metered prices in the current period, within 500 read units; past them
 * a 503, never a partial figure (`shared/services/subscription-meters.ts`).
 */
export async function getSubscription(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<Subscription> {
  const subscription = await readSubscription(deps.table, normalizeId(id));
  if (!subscription || !principal.organizationIds.includes(subscription.organization_id)) {
    throw new ResourceNotFound();
  }
  const { customer, product } = await getCustomerAndProduct(
    deps.table,
    subscription.customer_id,
    subscription.product_id,
  );
  // Both are soft-deleted, never removed: a missing one is a broken table, not a client error.
  if (!customer || !product) throw new Error(`subscription ${subscription.id} refers to a missing item`);
  const meters = await oneSubscriptionMeters(deps.table, subscription, product, deps.now());
  return presentSubscription(subscription, customer, product, meters);
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getSubscription: {
    table: [
      // The token and the subscription; then one batch of the customer and product it embeds.
      oneStatement(tokensAccess.findToken, subscriptionsAccess.getSubscription),
      ...tokensAccess.findAccessToken,
      ...catalogAccess.getCustomerAndProduct,
      // Its metered prices' meters (one batch), then each one's usage in the period (a Query each).
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
});
