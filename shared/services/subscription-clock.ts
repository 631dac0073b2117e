/**
 * The subscription clock: at the end of its current period a live subscription set to cancel ends,
 * and a free one renews. A scheduled function runs it every minute (`functions/subscription-clock`),
 * `npm start` on a timer.
 *
 * It finds due subscriptions through the due index (GSI2, one of a few shards by id, sorted by the
 * end of the current period), never a scan, in batches of `batchSize`, and decides on each
 * subscription as read strongly consistent (the index may lag). Each change is one transaction
 * (`writeSubscriptionChange`): the subscription, its list entries, its due-index keys and its webhook
 * events, conditioned on the `change_id` it was decided on. So running twice, or two runs at once, changes nothing twice
 * (the loser's condition fails and it moves on), and a run that stops anywhere leaves every
 * subscription either changed in full or untouched, for the next run to take up.
 *
 * The shards run at once, each its own loop. A subscription whose change fails for any reason but a
 * failed condition (a missing customer or product, an oversized transaction, a throttle) is isolated:
 * counted in the report (`failures`, its id in `failed`), logged with its id, and skipped past by its
 * shard's cursor; the rest of its shard and the other shards go on, and the next run (a minute later)
 * tries it again, once. Why not move its due key later (a back-off): that is itself a write to the
 * item, which fails in the same ways (throttled, oversized, missing), needs a grant of its own, and
 * would make the due index say something other than the period's end. A poisoned subscription costs
 * one index entry read and one failed attempt a minute, and the alarm on `ClockFailures` fires until
 * someone fixes it. A shard whose read fails (the index query, the batch read) stops for this run,
 * counted too; the other shards go on.
 */
import { access as catalogAccess, getCustomersAndProducts } from '../data/catalog.ts';
import { type FunctionAccess, oneStatement } from '../data/grants.ts';
import { access as outboxAccess, outboxWrites } from '../data/outbox.ts';
import type { CustomerRecord, ProductRecord, SubscriptionRecord } from '../data/records.ts';
import {
  type DueCursor,
  dueShards,
  findDue,
  getSubscriptions,
  access as subscriptionsAccess,
  type TransactItems,
  writeSubscriptionChange,
} from '../data/subscriptions.ts';
import { ConditionFailed } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { atPeriodEnd, type PeriodEndChange } from '../domain/subscription-lifecycle.ts';
import type { Subscription } from '../generated/api-types.ts';
import { emitClockRun, logError, logInfo } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { presentSubscription, type SubscriptionMeter } from './presenters.ts';
import {
  ListReadTooCostly,
  readSubscriptionMeters,
  access as subscriptionMetersAccess,
} from './subscription-meters.ts';
import { lifecycleOutbox } from './update-subscription.ts';

/** Subscriptions read and changed at a time: one index Query, one batch read, this many transactions. */
export const CLOCK_BATCH_SIZE = 25;

/** Failed subscription ids a report keeps (the count, `failures`, stays exact beyond). */
export const CLOCK_FAILED_IDS_KEPT = 100;

export interface ClockReport {
  /** Renewed for one more period (a subscription several periods behind renews once per period). */
  renewed: number;
  /** Ended at the end of the period they were set to cancel at. */
  ended: number;
  /** Named by the index but not due when read (the index lags), or changed by another run meanwhile. */
  skipped: number;
  /** Due but not free: renewing them needs a charge this API cannot make; they stay due. */
  notFree: string[];
  /**
   * Changes that failed other than on a condition (and shard reads that failed): each isolated, the
   * rest of the run went on, the next run tries again. Exact.
   */
  failures: number;
  /** The ids of subscriptions whose change failed, the first `CLOCK_FAILED_IDS_KEPT` of them. */
  failed: string[];
  /** Index queries made (each reads at most one batch). */
  batches: number;
  /**
   * False when the run stopped for time, or a shard's read failed, with due subscriptions possibly
   * left for the next run.
   */
  complete: boolean;
}

export interface ClockOptions {
  batchSize?: number;
  /** Whether there is time for another batch (the function's remaining time); default: always. */
  timeLeft?: () => boolean;
}

/**
 * The webhook events a period-end change emits, in the change's own transaction: a renewal is
 * `subscription.updated` then `subscription.cycled`; an end is `subscription.updated` then
 * `subscription.revoked` (its `canceled` went out when it was set to cancel), as
 * `lifecycleEventTypes` decides for every lifecycle change. `data` is the subscription as the API
 * answers it, customer and product embedded.
 */
export function periodEndEvents(
  deps: Pick<Dependencies, 'table'>,
  change: PeriodEndChange,
  before: SubscriptionRecord,
  after: SubscriptionRecord,
  presented: Subscription,
  now: string,
): TransactItems {
  if (change.kind === 'ended') return lifecycleOutbox(deps, before, after, presented, now);
  const subject = { kind: 'subscription', id: after.id, organizationId: after.organization_id } as const;
  const events = (['subscription.updated', 'subscription.cycled'] as const).map((type) => ({
    type,
    data: presented,
  }));
  return outboxWrites(deps.table, subject, now, events, newId);
}

/** One run of the clock at `deps.now()`: every shard at once, batch after batch, while there is time. */
export async function runSubscriptionClock(
  deps: Dependencies,
  options: ClockOptions = {},
): Promise<ClockReport> {
  const now = deps.now();
  const report: ClockReport = {
    renewed: 0,
    ended: 0,
    skipped: 0,
    notFree: [],
    failures: 0,
    failed: [],
    batches: 0,
    complete: true,
  };
  // Every shard's loop ends by itself (a failure is caught inside it): none is left in flight.
  await Promise.all(
    dueShards.map(async (shard) => {
      try {
        await runShard(deps, shard, now, options, report);
      } catch (error) {
        // The shard's read failed (a throttled query or batch read): its due subscriptions wait
        // for the next run; the other shards go on.
        report.failures++;
        report.complete = false;
        logError('subscription clock: shard failed', { shard, error_type: errorType(error) });
      }
    }),
  );
  return report;
}

/** One shard's loop: batch after batch from the shard's start, while there is time. */
async function runShard(
  deps: Dependencies,
  shard: number,
  now: Date,
  options: ClockOptions,
  report: ClockReport,
): Promise<void> {
  const batchSize = options.batchSize ?? CLOCK_BATCH_SIZE;
  // Tried and failed in this run: read again on a pass from the shard's start, but not retried.
  const failedHere = new Set<string>();
  let cursor: DueCursor | undefined;
  for (;;) {
    if (options.timeLeft && !options.timeLeft()) {
      report.complete = false;
      return;
    }
    const page = await findDue(deps.table, shard, now.toISOString(), batchSize, cursor);
    report.batches++;
    const ids = page.ids.filter((id) => !failedHere.has(id));
    const subscriptions = ids.length > 0 ? await getSubscriptions(deps.table, ids) : [];
    // The events embed each subscription's customer and product: one batch for the batch's.
    const embedded =
      subscriptions.length > 0
        ? await getCustomersAndProducts(
            deps.table,
            subscriptions.map((s) => s.customer_id),
            subscriptions.map((s) => s.product_id),
          )
        : undefined;
    const stillDue = await Promise.all(
      subscriptions.map(async (subscription) => {
        try {
          const customer = embedded?.customers.get(subscription.customer_id);
          const product = embedded?.products.get(subscription.product_id);
          if (!customer || !product) throw new MissingItem();
          return await settle(deps, { subscription, customer, product }, now, report);
        } catch (error) {
          failedHere.add(subscription.id);
          report.failures++;
          if (report.failed.length < CLOCK_FAILED_IDS_KEPT) report.failed.push(subscription.id);
          logError('subscription clock: change failed', {
            subscription_id: subscription.id,
            organization_id: subscription.organization_id,
            error_type: errorType(error),
          });
          return false;
        }
      }),
    );
    // On past the ones read; at the end of the shard, once more from its start while a renewal
    // left a subscription due again (several periods behind): each pass renews it one period.
    cursor = page.next;
    if (!cursor && !stillDue.includes(true)) return;
  }
}

/** A due subscription whose customer or product is not in the table: it cannot be presented. */
class MissingItem extends Error {
  override name = 'MissingCustomerOrProduct';
}

/** What failed, by the error's name only: a message may quote keys or values, which are never logged. */
const errorType = (error: unknown) => (error instanceof Error ? error.name : typeof error);

/** Applies what the period's end does to one subscription; answers whether it is due again after. */
async function settle(
  deps: Dependencies,
  read: { subscription: SubscriptionRecord; customer: CustomerRecord; product: ProductRecord },
  now: Date,
  report: ClockReport,
): Promise<boolean> {
  const { subscription: before, customer, product } = read;
  const change = atPeriodEnd(before, now);
  if (change === 'not due') {
    report.skipped++;
    return false;
  }
  if (change === 'not free') {
    report.notFree.push(before.id);
    return false;
  }
  const meters = await periodEndMeters(deps, { ...before, ...change.fields }, product, now);
  try {
    const after = await writeSubscriptionChange(
      deps.table,
      before,
      change.fields,
      now.toISOString(),
      (written) =>
        periodEndEvents(
          deps,
          change,
          before,
          written,
          presentSubscription(written, customer, product, meters),
          now.toISOString(),
        ),
    );
    report[change.kind]++;
    return after.ended_at === null && Date.parse(after.current_period_end) <= now.getTime();
  } catch (error) {
    // Changed since it was read (another run, or a customer's cancel): decided afresh next time.
    if (!(error instanceof ConditionFailed)) throw error;
    report.skipped++;
    return false;
  }
}

/**
 * The `meters` a period-end change's events carry: Get Subscription's for the subscription as the
 * change leaves it (a renewal: the new period's usage so far; an end: the period it ended), read
 * before the transaction (none and no read without a metered price). A read that fails is the
 * change's failure, tried again next run. Past the read bound, where Get answers 503, the change is
 * made anyway with `meters: []`, logged: the period's end cannot wait for a read that will not fit
 * on the next run either, and the clock has no caller to answer 503 to.
 */
async function periodEndMeters(
  deps: Dependencies,
  after: SubscriptionRecord,
  product: ProductRecord,
  now: Date,
): Promise<SubscriptionMeter[]> {
  try {
    return await readSubscriptionMeters(deps.table, after, product, now);
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    logError('subscription clock: meters over the read bound, events carry none', {
      subscription_id: after.id,
      organization_id: after.organization_id,
    });
    return [];
  }
}

/** The run's one line: what it did, for the function's logs. */
export function logClockRun(report: ClockReport, durationMs: number): void {
  logInfo('subscription clock', {
    ...report,
    notFree: report.notFree.length,
    duration_ms: Math.round(durationMs),
  });
  // Its metrics (EMF): the failures are what the clock's alarm reads (infra/monitoring.ts).
  emitClockRun(report);
}

/**
 * What this function may do (shared/data/grants.ts), keyed by its name: the grants of the data
 * functions it uses.
 */
export const functionAccess = (): Readonly<Record<string, FunctionAccess>> => ({
  'subscription-clock': {
    table: [
      // Each shard of the due index, then the due subscriptions and their customers and products
      // (the events embed them) in one batch; a renewal or an end, with its events (the outbox).
      ...subscriptionsAccess.findDue,
      oneStatement(subscriptionsAccess.getSubscriptions, catalogAccess.getCustomersAndProducts),
      ...subscriptionsAccess.writeSubscriptionChange,
      ...outboxAccess.outboxWrites,
      // With metered prices, each change's meters (one batch) and usage (a Query each), before it.
      ...subscriptionMetersAccess.subscriptionMeters,
    ],
  },
});
