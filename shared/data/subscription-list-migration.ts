/**
 * Moving a deployed stack's subscription lists into their shards (`shared/data/subscriptions.ts`
 * `subscriptionListings`): the subscriptions written before the shards are listed in their
 * organization's and their product's unsharded partitions (`LIST#SUBSCRIPTION#<org>`,
 * `LIST#SUBSCRIPTION-PRODUCT#<org>#<product>`) and carry no `list_layout`. They are found with one
 * Scan of the subscription items (an operator's one-off), then each is moved on its own: read
 * (strongly consistent), then one transaction that marks it on condition that it is exactly as read
 * and not yet marked, and moves its entries (`moveSubscriptionToShards`); the stream's projection
 * moves its counts after it. A subscription changed meanwhile is read and moved again; one moved
 * meanwhile (another run) is skipped. So a run can be interrupted anywhere and run again: nothing is
 * moved twice, no subscription is missing from a list at any moment (readers read the unsharded
 * partitions as one more source), and the counts stay exact once the relay has run.
 * `npm run admin -- subscription migrate-lists`.
 */
import { ConditionFailed } from '../domain/errors.ts';
import { scanAll, type Table } from './dynamo.ts';
import { getSubscription, moveSubscriptionToShards } from './subscriptions.ts';
import { partitions } from './table.ts';

/** Attempts at moving one subscription that keeps changing while it is moved. */
const ATTEMPTS = 5;

export interface SubscriptionListMigration {
  /** Subscriptions moved into their shards by this run. */
  migrated: number;
  /** Subscriptions found moved already (by another run) when read. */
  skipped: number;
  /** Subscriptions that kept changing while moved: still unsharded, run again. */
  busy: string[];
}

export interface SubscriptionListMigrationOptions {
  /** Stop after moving this many (a rehearsal of an interrupted run). */
  stopAfter?: number;
}

export async function migrateSubscriptionLists(
  table: Table,
  options: SubscriptionListMigrationOptions = {},
): Promise<SubscriptionListMigration> {
  const unsharded = await scanAll(table, {
    FilterExpression:
      'begins_with(PK, :subscription) AND entity = :entity AND attribute_not_exists(list_layout)',
    ExpressionAttributeValues: { ':subscription': partitions.subscription, ':entity': 'subscription' },
    ProjectionExpression: 'id',
    ConsistentRead: true,
  });
  const report: SubscriptionListMigration = { migrated: 0, skipped: 0, busy: [] };
  for (const id of unsharded.map((stored) => String(stored.id))) {
    if (options.stopAfter !== undefined && report.migrated >= options.stopAfter) break;
    for (let attempt = 1; ; attempt++) {
      const subscription = await getSubscription(table, id);
      if (!subscription || subscription.list_layout === 'sharded') {
        report.skipped++;
        break;
      }
      try {
        await moveSubscriptionToShards(table, subscription);
        report.migrated++;
        break;
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
        if (attempt >= ATTEMPTS) {
          report.busy.push(id);
          break;
        }
      }
    }
  }
  return report;
}
