import { getCustomerAndProduct } from '../data/catalog.ts';
import { getSubscription, updateSubscriptionLifecycle } from '../data/subscriptions.ts';
import { ConditionFailed, ResourceNotFound, SubscriptionLocked } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import { applyLifecycle, type LifecycleChange } from '../domain/subscription-lifecycle.ts';
import type { Subscription, UpdateSubscriptionBody } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { presentSubscription } from './presenters.ts';

/** Attempts at a change that keeps losing the race to other changes of the same subscription. */
const ATTEMPTS = 2;

/**
 * Runs a read-decide-write attempt again when its conditional write lost the race to another
 * change (ConditionFailed): the loser is re-decided once on fresh data, then 409 SubscriptionLocked.
 */
export async function retryLostRace<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tried = 1; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      if (tried >= ATTEMPTS) throw new SubscriptionLocked();
    }
  }
}

/** The change a PATCH body asks for. */
export function lifecycleChangeOf(body: UpdateSubscriptionBody): LifecycleChange {
  const details = {
    reason: body.customer_cancellation_reason ?? null,
    comment: body.customer_cancellation_comment ?? null,
  };
  return 'revoke' in body && body.revoke === true
    ? { kind: 'revoke', ...details }
    : {
        kind: 'cancel',
        atPeriodEnd: (body as { cancel_at_period_end: boolean }).cancel_at_period_end,
        ...details,
      };
}

/**
 * Applies a lifecycle change to a subscription of one of the caller's organizations (another
 * organization's is the same 404 as an unknown id), re-deciding on fresh data when a concurrent
 * change wins the race. Round trips: auth, the subscription, its customer and product, the
 * conditional write: 4.
 */
export function changeSubscription(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  change: LifecycleChange,
): Promise<Subscription> {
  return retryLostRace(async () => {
    const before = await getSubscription(deps.table, normalizeId(id));
    if (!before || !principal.organizationIds.includes(before.organization_id)) throw new ResourceNotFound();
    const now = deps.now().toISOString();
    const fields = applyLifecycle(before, change, now);
    // The embedded customer and product first: a failure there leaves the subscription untouched.
    const { customer, product } = await getCustomerAndProduct(
      deps.table,
      before.customer_id,
      before.product_id,
    );
    if (!customer || !product) throw new Error(`subscription ${before.id} refers to a missing item`);
    const after = await updateSubscriptionLifecycle(deps.table, before, fields, now);
    return presentSubscription(after, customer, product);
  });
}
