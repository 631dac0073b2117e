/**
 * The subscription lists' counts as the stream's projection keeps them (`shared/data/subscription-
 * counts.ts`), for test tables without a stream: every subscription item of the table is handed to
 * the projection as the relay would hand over its newest stream record, with a sequence number above
 * every one used before in this process. After `projectSubscriptionCounts(table)` the counts are
 * those the projection reaches once the stream has caught up.
 */
import type { Table } from '#shared/data/dynamo.ts';
import { record, type StoredSubscription } from '#shared/data/records.ts';
import {
  projectSubscriptionCounts as project,
  type SubscriptionImage,
} from '#shared/data/subscription-counts.ts';
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
