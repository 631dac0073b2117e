import { access as catalogAccess, getCustomerAndProduct } from '../data/catalog.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as outboxAccess, outboxWrites } from '../data/outbox.ts';
import type { SubscriptionRecord } from '../data/records.ts';
import {
  getSubscription,
  access as subscriptionsAccess,
  updateSubscriptionLifecycle,
} from '../data/subscriptions.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { ConditionFailed, ResourceNotFound, SubscriptionLocked } from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import {
  applyLifecycle,
  type LifecycleChange,
  lifecycleEventTypes,
} from '../domain/subscription-lifecycle.ts';
import type { Subscription, UpdateSubscriptionBody } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { presentSubscription } from './presenters.ts';
import { oneSubscriptionMeters, access as subscriptionMetersAccess } from './subscription-meters.ts';

/**
 * The webhook events of a lifecycle change (`lifecycleEventTypes`), for the change's own transaction:
 * every writer of a subscription's lifecycle (Update and Revoke, the customer portal, the period-end
 * clock) sends them the same way.
 */
export function lifecycleOutbox(
  deps: Pick<Dependencies, 'table'>,
  before: SubscriptionRecord,
  after: SubscriptionRecord,
  presented: Subscription,
  now: string,
) {
  const subject = { kind: 'subscription', id: after.id, organizationId: after.organization_id } as const;
  const events = lifecycleEventTypes(before, after).map((type) => ({ type, data: presented }));
  return outboxWrites(deps.table, subject, now, events, newId);
}

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
 * change wins the race. The change and its webhook events are one transaction. Round trips: auth,
 * the subscription, its customer and product, the conditional write: 4; with metered prices, + the
 * meters' batch and the usage Queries side by side, before the write (its answer and its events
 * carry Get Subscription's `meters`: `oneSubscriptionMeters`).
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
    const at = deps.now();
    const now = at.toISOString();
    const fields = applyLifecycle(before, change, now);
    // The embedded customer and product, then the meters of the subscription as the change leaves
    // it, first: a failure there (a 503 past the read bound) leaves the subscription untouched.
    const { customer, product } = await getCustomerAndProduct(
      deps.table,
      before.customer_id,
      before.product_id,
    );
    if (!customer || !product) throw new Error(`subscription ${before.id} refers to a missing item`);
    const meters = await oneSubscriptionMeters(deps.table, { ...before, ...fields }, product, at);
    const after = await updateSubscriptionLifecycle(deps.table, before, fields, now, (written) =>
      lifecycleOutbox(deps, before, written, presentSubscription(written, customer, product, meters), now),
    );
    return presentSubscription(after, customer, product, meters);
  });
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  updateSubscription: {
    table: [
      // The token and the subscription; the conditional lifecycle write, its relisting and its
      // events (the outbox); the embedded customer and product, read beside the write; with metered
      // prices their meters (one batch) and usage (a Query each), read before it.
      oneStatement(tokensAccess.findToken, subscriptionsAccess.getSubscription),
      ...tokensAccess.findAccessToken,
      ...subscriptionsAccess.writeSubscriptionChange,
      ...outboxAccess.outboxWrites,
      ...catalogAccess.getCustomerAndProduct,
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
  revokeSubscription: {
    table: [
      oneStatement(tokensAccess.findToken, subscriptionsAccess.getSubscription),
      ...tokensAccess.findAccessToken,
      ...subscriptionsAccess.writeSubscriptionChange,
      ...outboxAccess.outboxWrites,
      ...catalogAccess.getCustomerAndProduct,
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
});
