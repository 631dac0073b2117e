/**
 * The subscription lists' counts, kept from the table stream (issue 25): a subscription's own
 * transactions write its list entries but no count shard, so that concurrent signups of one
 * organization or one product share no item (`shared/data/subscriptions.ts`). The webhook relay
 * hands this projection the stream's inserts and changes of subscription items
 * (`relayStreamFilters.subscription`), and it moves each subscription's count in its four lists
 * from where it was counted to where its newest image says (`countWrites`: a segment left, −1 on
 * its shard; a segment entered, +1).
 *
 * **Once per change, whatever the stream retries.** Where a subscription is counted is recorded on
 * an item of its own, `SUBSCRIPTION#<id>` / `#COUNTED` (`counted`: its owners, status and amount;
 * `sequence`: the stream sequence number of the image counted), written in the same transaction as
 * the count updates, conditioned on being as read. A batch handled again, a record replayed, or an
 * older image arriving after a newer one (sequence not above the one counted) changes nothing; two
 * runs racing on one subscription: one transaction passes, the other re-reads and finds it done. A
 * change whose record is lost (its batch ended in the relay's dead-letter queue) is repaired by the
 * subscription's next change: the projection moves it from where it *was counted*, not from where
 * the previous image said. A batch's images of one subscription are taken in stream order.
 *
 * **Tables older than these counts need no backfill.** Their subscriptions were counted by their own
 * transactions and have no marker. An image tells whose counts its write kept (`streamCounted`,
 * shared/data/subscriptions.ts): this code's writes set `counts_change` to their `change_id`. This
 * code's first change of such a subscription stores where its transactions counted it
 * (`counted_from`, the image before); with no marker the projection moves it from there. An image of
 * the older code (a deploy's roll-out, when old and new functions serve side by side: no
 * `counts_change`, or one its `change_id` moved past) moved the counts in its own transaction: it is
 * only recorded in the marker, nothing moves.
 *
 * **Freshness.** A subscription is counted once the relay's stream batch holding its write has run:
 * on AWS the event source mapping polls each stream shard about four times a second and the relay
 * answers in well under its 60 s timeout, so a change is counted within seconds (the stack's relay
 * alarms cover a mapping that falls behind); locally the pipeline polls every 50 ms
 * (`scripts/local/pipeline.ts`). Until then a list shows the subscription (its entries are written
 * with it) and only `total` may lag (`shared/data/listing.ts`, "Counts kept from the stream").
 *
 * Cost: per subscription whose segment changes (a create, a revoke, an end), one transaction of
 * 1 + 4 (create) or 1 + 8 (move) small items; changes within a segment (cancel at period end,
 * uncancel, a renewal) write nothing (one marker put for an older subscription's first). The
 * markers of a batch are read in one BatchGetItem.
 */
import { ConditionFailed } from '../domain/errors.ts';
import { readMany } from './catalog.ts';
import { orderedSequence, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { countWrites } from './listing.ts';
import type { StoredSubscription } from './records.ts';
import { type CountedPlace, countedPlace, streamCounted, subscriptionListings } from './subscriptions.ts';
import { keys } from './table.ts';

/**
 * One subscription image from the stream, with the record's sequence number: its place, and whose
 * counts the write that made it kept (`streamCounted`, `COUNTED_FROM`: shared/data/subscriptions.ts).
 */
export interface SubscriptionImage {
  sequence: string;
  subscription: CountedPlace & { change_id?: string; counts_change?: string; counted_from?: CountedPlace };
}

/** The marker's sort key, in the subscription's own partition. */
export const COUNTED_SORT_KEY = '#COUNTED';

const markerKey = (id: string) => ({ PK: keys.subscription(id).PK, SK: COUNTED_SORT_KEY });

interface Marker {
  sequence: string;
  counted: CountedPlace;
}

const listings = Object.values(subscriptionListings);

/** Subscriptions handled at once within a batch (each its own small transactions). */
const WIDTH = 4;
/** A marker changed between its read and the write: read again, decide again. */
const ATTEMPTS = 3;

/**
 * Counts each subscription of the batch where its images say, once (see above): its images in
 * stream order, each from where the one before left it (a write of the older code, which moved the
 * counts in its own transaction, is only recorded). Throws when anything failed, so that the relay's
 * whole batch is retried (every step here is idempotent).
 */
export async function projectSubscriptionCounts(
  table: Table,
  images: readonly SubscriptionImage[],
): Promise<void> {
  const bySubscription = new Map<string, SubscriptionImage[]>();
  for (const image of images) {
    const list = bySubscription.get(image.subscription.id) ?? [];
    list.push(image);
    bySubscription.set(image.subscription.id, list);
  }
  if (bySubscription.size === 0) return;
  const found = await readMany(
    table,
    [...bySubscription.keys()].map((id) => markerKey(id)),
  );
  const markers = new Map<string, Marker>();
  for (const stored of found.values()) {
    const marker = stored as unknown as Marker;
    markers.set(marker.counted.id, marker);
  }
  const work = [...bySubscription.entries()];
  for (let i = 0; i < work.length; i += WIDTH) {
    await Promise.all(
      work.slice(i, i + WIDTH).map(async ([id, list]) => {
        let marker = markers.get(id);
        const inOrder = [...list].sort((a, b) =>
          orderedSequence(a.sequence) < orderedSequence(b.sequence) ? -1 : 1,
        );
        for (const image of inOrder) marker = await project(table, image, marker);
      }),
    );
  }
}

/** One image counted (or recorded) after the marker as read; answers the marker as it now is. */
async function project(
  table: Table,
  image: SubscriptionImage,
  read: Marker | undefined,
): Promise<Marker | undefined> {
  const target = countedPlace(image.subscription);
  const sequence = orderedSequence(image.sequence);
  const ours = streamCounted(image.subscription);
  let marker = read;
  for (let attempt = 1; ; attempt++) {
    if (marker && marker.sequence >= sequence) return marker;
    // Ours: moved from where it was counted (the marker; without one, where the older code's
    // transactions counted it, `counted_from`, or nowhere). Not ours: the write's own transaction
    // moved the counts already; only where it now is gets recorded.
    const from = marker?.counted ?? image.subscription.counted_from;
    const moves = ours
      ? listings.flatMap((listing) =>
          countWrites(table, listing, from as StoredSubscription | undefined, target as StoredSubscription),
        )
      : [];
    // Counted there already (a renewal, a cancel at period end): nothing to move, nothing to record.
    if (marker && moves.length === 0 && samePlace(marker.counted, target)) return marker;
    try {
      await transact(table, [
        {
          Put: {
            TableName: table.name,
            Item: {
              ...markerKey(target.id),
              entity: 'subscription_counted',
              sequence,
              counted: target,
            },
            ...(marker
              ? {
                  ConditionExpression: '#sequence = :read',
                  ExpressionAttributeNames: { '#sequence': 'sequence' },
                  ExpressionAttributeValues: { ':read': marker.sequence },
                }
              : { ConditionExpression: 'attribute_not_exists(PK)' }),
          },
        },
        ...moves,
      ]);
      return { sequence, counted: target };
    } catch (error) {
      if (!(error instanceof ConditionFailed) || attempt >= ATTEMPTS) throw error;
      const fresh = await readMany(table, [markerKey(target.id)]);
      marker = [...fresh.values()][0] as Marker | undefined;
    }
  }
}

/** Counted in the same places: the same owners, segment and id. */
const samePlace = (a: CountedPlace, b: CountedPlace) =>
  JSON.stringify(countedPlace(a)) === JSON.stringify(countedPlace(b));

/** IAM (shared/data/grants.ts). */
export const access = {
  /**
   * The batch's markers read in one batch (a lost race: one read again); per subscription one
   * transaction: its marker put, the count shards of its four lists updated.
   */
  projectSubscriptionCounts: [
    {
      actions: ['dynamodb:BatchGetItem', 'dynamodb:PutItem'],
      leadingKeys: ['subscription'],
    },
    {
      actions: ['dynamodb:UpdateItem'],
      leadingKeys: [
        'subscriptionList',
        'subscriptionCustomerList',
        'subscriptionProductList',
        'subscriptionCustomerProductList',
      ],
    },
  ],
} as const satisfies DataAccess;
