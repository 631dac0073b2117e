/**
 * The subscription lists' counts as the stream's projection keeps them (`shared/data/subscription-
 * counts.ts`), for test tables without a stream: every subscription item of the table is handed to
 * the projection as the relay would hand over its newest stream record, with a sequence number above
 * every one used before in this process. After `projectSubscriptionCounts(table)` the counts are
 * those the projection reaches once the stream has caught up.
 */

import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Table } from '#shared/data/dynamo.ts';
import { countShard, segmentRegistryWrite } from '#shared/data/listing.ts';
import { record, type StoredSubscription } from '#shared/data/records.ts';
import {
  projectSubscriptionCounts as project,
  type SubscriptionImage,
} from '#shared/data/subscription-counts.ts';
import { SUBSCRIPTION_LIST_SHARDS, subscriptionListings } from '#shared/data/subscriptions.ts';
import { partitions } from '#shared/data/table.ts';
import { scanTable } from './table-state.ts';
import { waitFor } from './wait.ts';

let sequence = BigInt(Date.now()) * 1_000_000n;
/** A stream sequence number above every one given before (as DynamoDB's grow per item). */
export const nextSequence = (): string => String(++sequence);

/** Every subscription item of the table, as stored (the table's Scan, `scanTable`). */
export async function storedSubscriptions(table: Table): Promise<StoredSubscription[]> {
  const subscription = (pk: unknown, sk: unknown) =>
    String(pk).startsWith(partitions.subscription) && String(sk).startsWith(partitions.subscription);
  return (await scanTable(table))
    .filter((item) => subscription(item.PK, item.SK))
    .map((item) => record<StoredSubscription>(item));
}

/** The projection run over every subscription's current image: the counts once the stream caught up. */
export async function projectSubscriptionCounts(table: Table): Promise<void> {
  const images: SubscriptionImage[] = (await storedSubscriptions(table)).map((subscription) => ({
    sequence: nextSequence(),
    subscription,
  }));
  await project(table, images);
}

/**
 * How long a test waits for the stream's projection to count the subscriptions it just wrote: a
 * deadline for a hang (a loaded machine's pipeline), not the freshness the docs promise.
 */
export const COUNTS_DEADLINE_MS = 30_000;

/**
 * Waits until a subscription list's `total` (read by `total`, e.g. a page of one) is `expected`: the
 * counts have caught up with the writes (docs/data-model.md, "Subscription counts"). A page walk that
 * relies on the total (an SDK's page iterator stops at `max_page`) starts after this.
 */
export async function countsSettled(total: () => Promise<number>, expected: number, what: string) {
  let last = -1;
  await waitFor(
    async () => {
      last = await total();
      return last === expected;
    },
    COUNTS_DEADLINE_MS,
    `${what}: total ${expected}`,
  ).catch((error: Error) => {
    throw new Error(`${error.message} (last total seen ${last})`);
  });
}

/**
 * The `active` and `canceled` segments (free) of an organization's list and of one product's list
 * registered in each of their 16 shards, as in a tenant that has signed up and revoked before: the
 * first subscription into a segment of a shard puts its registry item after its transaction (one
 * round trip more), and a test of a create's or a revoke's round trips counts those of every later one.
 */
export async function sharedSegmentsRegistered(
  table: Table,
  demo: { organization_id: string; free_product_id: string; customer_id: string },
): Promise<void> {
  const byShard = new Map<number, string>();
  while (byShard.size < SUBSCRIPTION_LIST_SHARDS) {
    const id = crypto.randomUUID();
    byShard.set(countShard(id), id);
  }
  const writes = [...byShard.values()].flatMap((id) =>
    (['active', 'canceled'] as const).flatMap((status) => {
      const subscription = {
        id,
        list_layout: 'sharded',
        organization_id: demo.organization_id,
        product_id: demo.free_product_id,
        customer_id: demo.customer_id,
        status,
        amount: 0,
      } as StoredSubscription;
      return [subscriptionListings.organization, subscriptionListings.product].map(
        (listing) => segmentRegistryWrite(table, listing, subscription).Put,
      );
    }),
  );
  await Promise.all(writes.map((put) => table.doc.send(new PutCommand(put))));
}
