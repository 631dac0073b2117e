/**
 * The subscription state machine, as pure functions of a subscription and the time:
 *
 *   active ──cancel at period end──▶ active, cancel_at_period_end (canceled_at, ends_at = period end)
 *     ▲                                   │
 *     └──────────────uncancel─────────────┘
 *   active (either) ──revoke──▶ canceled (ended_at = ends_at = now)
 *
 * An ended subscription (`ended_at` set) accepts no change: AlreadyCanceledSubscription.
 *
 * Time moves a live subscription at the end of its current period (`atPeriodEnd`): one set to cancel
 * ends (`canceled`, `ended_at` = `ends_at` = the period's end), a free one renews for the next period.
 *
 * A customer (the portal) has the stricter transitions of the hosted service's portal: cancel only a
 * subscription not yet set to cancel, uncancel only one that is (`applyCustomerChange`).
 */
import type { CancellationReason, SubscriptionRecord } from '../data/records.ts';
import { AlreadyCanceledSubscription, SubscriptionNotScheduledToCancel } from './errors.ts';
import { nextPeriodEnd } from './period.ts';

export type LifecycleFields = Pick<
  SubscriptionRecord,
  | 'status'
  | 'cancel_at_period_end'
  | 'canceled_at'
  | 'ends_at'
  | 'ended_at'
  | 'customer_cancellation_reason'
  | 'customer_cancellation_comment'
>;

export type LifecycleChange =
  | {
      kind: 'cancel';
      atPeriodEnd: boolean;
      reason?: CancellationReason | null;
      comment?: string | null;
    }
  | { kind: 'revoke'; reason?: CancellationReason | null; comment?: string | null };

/** What a subscription stored before these fields existed reads as: live, not canceled. */
export const LIVE: LifecycleFields = {
  status: 'active',
  cancel_at_period_end: false,
  canceled_at: null,
  ends_at: null,
  ended_at: null,
  customer_cancellation_reason: null,
  customer_cancellation_comment: null,
};

export function applyLifecycle(
  subscription: SubscriptionRecord,
  change: LifecycleChange,
  now: string,
): LifecycleFields {
  if (subscription.ended_at !== null || subscription.status !== 'active') {
    throw new AlreadyCanceledSubscription();
  }
  if (change.kind === 'revoke') {
    return {
      status: 'canceled',
      cancel_at_period_end: false,
      canceled_at: subscription.canceled_at ?? now,
      ends_at: now,
      ended_at: now,
      customer_cancellation_reason: change.reason ?? subscription.customer_cancellation_reason,
      customer_cancellation_comment: change.comment ?? subscription.customer_cancellation_comment,
    };
  }
  if (!change.atPeriodEnd) return { ...LIVE };
  return {
    status: 'active',
    cancel_at_period_end: true,
    // Canceling again keeps the first cancellation's time; the reason may be updated.
    canceled_at: subscription.cancel_at_period_end ? subscription.canceled_at : now,
    ends_at: subscription.current_period_end,
    ended_at: null,
    customer_cancellation_reason: change.reason ?? subscription.customer_cancellation_reason,
    customer_cancellation_comment: change.comment ?? subscription.customer_cancellation_comment,
  };
}

/** What a customer may do to their own subscription in the portal. */
export type CustomerChange =
  | { kind: 'cancel'; reason?: CancellationReason | null; comment?: string | null }
  | { kind: 'uncancel' };

export function applyCustomerChange(
  subscription: SubscriptionRecord,
  change: CustomerChange,
  now: string,
): LifecycleFields {
  const ended = subscription.ended_at !== null || subscription.status !== 'active';
  if (change.kind === 'cancel') {
    if (ended || subscription.cancel_at_period_end) throw new AlreadyCanceledSubscription();
    return applyLifecycle(subscription, { ...change, atPeriodEnd: true }, now);
  }
  if (ended) throw new AlreadyCanceledSubscription();
  if (!subscription.cancel_at_period_end) throw new SubscriptionNotScheduledToCancel();
  return applyLifecycle(subscription, { kind: 'cancel', atPeriodEnd: false }, now);
}

/** What the end of the current period does to a live subscription, if that end has come. */
export type PeriodEndChange =
  | { kind: 'ended'; fields: LifecycleFields }
  | { kind: 'renewed'; fields: Pick<SubscriptionRecord, 'current_period_start' | 'current_period_end'> };

/**
 * The change due at `now`: none while the period runs, for an ended subscription, or for a paid one
 * (renewing it needs a charge this API cannot make; it stays due and is reported).
 */
export function atPeriodEnd(
  subscription: SubscriptionRecord,
  now: Date,
): PeriodEndChange | 'not due' | 'not free' {
  const end = new Date(subscription.current_period_end);
  if (subscription.ended_at !== null || subscription.status !== 'active' || end.getTime() > now.getTime()) {
    return 'not due';
  }
  if (subscription.cancel_at_period_end) {
    return {
      kind: 'ended',
      fields: {
        status: 'canceled',
        cancel_at_period_end: true,
        canceled_at: subscription.canceled_at,
        ends_at: subscription.current_period_end,
        ended_at: subscription.current_period_end,
        customer_cancellation_reason: subscription.customer_cancellation_reason,
        customer_cancellation_comment: subscription.customer_cancellation_comment,
      },
    };
  }
  if (subscription.amount !== 0) return 'not free';
  const next = nextPeriodEnd(
    new Date(subscription.started_at),
    subscription.recurring_interval,
    subscription.recurring_interval_count,
    end,
  );
  return {
    kind: 'renewed',
    fields: { current_period_start: subscription.current_period_end, current_period_end: next.toISOString() },
  };
}

type LifecycleEvent =
  | 'subscription.updated'
  | 'subscription.canceled'
  | 'subscription.uncanceled'
  | 'subscription.revoked';

/**
 * The webhook events of a lifecycle change, in the order they are sent: always `updated`, then
 * `canceled` when the subscription becomes canceled (at period end, or by a revoke of one that was
 * not canceled yet), `uncanceled` when a cancellation is withdrawn, `revoked` when it ends now.
 */
export function lifecycleEventTypes(before: LifecycleFields, after: LifecycleFields): LifecycleEvent[] {
  const types: LifecycleEvent[] = ['subscription.updated'];
  const wasCanceled = before.cancel_at_period_end || before.ended_at !== null;
  const ended = before.ended_at === null && after.ended_at !== null;
  if (!wasCanceled && (after.cancel_at_period_end || ended)) types.push('subscription.canceled');
  if (before.cancel_at_period_end && !after.cancel_at_period_end && !ended)
    types.push('subscription.uncanceled');
  if (ended) types.push('subscription.revoked');
  return types;
}
