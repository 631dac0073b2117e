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
 * the previous image said.
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
 * uncancel, a renewal) write nothing. The markers of a batch are read in one BatchGetItem.
 */
import { ConditionFailed } from '../domain/errors.ts';
import { readMany } from './catalog.ts';
import { type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { countWrites } from './listing.ts';
import type { StoredSubscription } from './records.ts';
import { subscriptionListings } from './subscriptions.ts';
import { keys } from './table.ts';

/** What decides where a subscription is counted: its lists' owners, its segment, its id (the shard). */
type Counted = Pick<
  StoredSubscription,
  'id' | 'organization_id' | 'customer_id' | 'product_id' | 'status' | 'amount'
>;

/** One subscription image from the stream, with the record's sequence number. */
export interface SubscriptionImage {
  sequence: string;
  subscription: Counted;
}

/** The marker's sort key, in the subscription's own partition. */
export const COUNTED_SORT_KEY = '#COUNTED';

/** Stream sequence numbers are decimal strings of up to 40 digits; padded, they compare as text. */
const ordered = (sequence: string) => sequence.padStart(40, '0');

const countedOf = (s: Counted): Counted => ({
  id: s.id,
  organization_id: s.organization_id,
  customer_id: s.customer_id,
  product_id: s.product_id,
  status: s.status,
  amount: s.amount,
});

const markerKey = (id: string) => ({ PK: keys.subscription(id).PK, SK: COUNTED_SORT_KEY });

interface Marker {
  sequence: string;
  counted: Counted;
}

const listings = Object.values(subscriptionListings);

/** Subscriptions handled at once within a batch (each its own small transaction). */
const WIDTH = 4;
/** A marker changed between its read and the write: read again, decide again. */
const ATTEMPTS = 3;

/**
 * Counts each subscription of the batch where its newest image says, once (see above). Throws when
 * anything failed, so that the relay's whole batch is retried (every step here is idempotent).
 */
export async function projectSubscriptionCounts(
  table: Table,
  images: readonly SubscriptionImage[],
): Promise<void> {
  const newest = new Map<string, SubscriptionImage>();
  for (const image of images) {
    const seen = newest.get(image.subscription.id);
    if (!seen || ordered(image.sequence) > ordered(seen.sequence)) newest.set(image.subscription.id, image);
  }
  if (newest.size === 0) return;
  const found = await readMany(
    table,
    [...newest.keys()].map((id) => markerKey(id)),
  );
  const markers = new Map<string, Marker>();
  for (const stored of found.values()) {
    markers.set(String(stored.PK).slice(keys.subscription('').PK.length), stored as unknown as Marker);
  }
  const work = [...newest.values()];
  for (let i = 0; i < work.length; i += WIDTH) {
    await Promise.all(
      work.slice(i, i + WIDTH).map((image) => project(table, image, markers.get(image.subscription.id))),
    );
  }
}

async function project(table: Table, image: SubscriptionImage, marker: Marker | undefined): Promise<void> {
  const target = countedOf(image.subscription);
  const sequence = ordered(image.sequence);
  for (let attempt = 1; ; attempt++) {
    if (marker && marker.sequence >= sequence) return;
    const moves = listings.flatMap((listing) =>
      countWrites(
        table,
        listing,
        marker?.counted as StoredSubscription | undefined,
        target as StoredSubscription,
      ),
    );
    // Counted there already (a renewal, a cancel at period end): nothing to move, nothing to record.
    if (marker && moves.length === 0) return;
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
      return;
    } catch (error) {
      if (!(error instanceof ConditionFailed) || attempt >= ATTEMPTS) throw error;
      const fresh = await readMany(table, [markerKey(target.id)]);
      marker = [...fresh.values()][0] as Marker | undefined;
    }
  }
}

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
