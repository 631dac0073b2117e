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
import { getSubscription, moveSubscriptionToShards, relistInShards } from './subscriptions.ts';
import { type Key, partitions } from './table.ts';

/** Attempts at moving one subscription that keeps changing while it is moved. */
const ATTEMPTS = 5;

export interface SubscriptionListMigration {
  /** Subscriptions moved into their shards by this run. */
  migrated: number;
  /** Subscriptions found moved already (by another run) when read. */
  skipped: number;
  /**
   * Marked subscriptions whose entries a function of the release before relisted in the unsharded
   * partitions during the deployment, relisted in their shards (`relistInShards`).
   */
  repaired: number;
  /** Subscriptions that kept changing while moved or repaired: run again. */
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
  const report: SubscriptionListMigration = { migrated: 0, skipped: 0, repaired: 0, busy: [] };
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
  await repairStrays(table, report);
  return report;
}

/** An entry in an unsharded partition: its partition key does not end `#S<k>`. */
const SHARD_PARTITION = /#S\d+$/;

/**
 * Marked subscriptions with entries left in the unsharded partitions (changed there by a function
 * of the release before, during the deployment: `relistInShards`): every entry of the organization's
 * and the products' lists found with one Scan, and each such subscription's entries made those of
 * its state, in one transaction conditioned on it being as read (changed meanwhile: read again).
 */
async function repairStrays(table: Table, report: SubscriptionListMigration): Promise<void> {
  const entries = await scanAll(table, {
    FilterExpression: '(begins_with(PK, :organization) OR begins_with(PK, :product)) AND entity = :entry',
    ExpressionAttributeValues: {
      ':organization': partitions.subscriptionList,
      ':product': partitions.subscriptionProductList,
      ':entry': 'subscription_entry',
    },
    ProjectionExpression: 'PK, SK, id',
    ConsistentRead: true,
  });
  const byId = new Map<string, Key[]>();
  for (const entry of entries) {
    const id = String(entry.id);
    byId.set(id, [...(byId.get(id) ?? []), { PK: String(entry.PK), SK: String(entry.SK) }]);
  }
  for (const [id, found] of byId) {
    if (found.every((key) => SHARD_PARTITION.test(key.PK))) continue;
    for (let attempt = 1; ; attempt++) {
      const subscription = await getSubscription(table, id);
      // Unmarked: moved by this run unless busy (its entries are then where it says).
      if (subscription?.list_layout !== 'sharded') break;
      try {
        await relistInShards(table, subscription, found);
        report.repaired++;
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
}
