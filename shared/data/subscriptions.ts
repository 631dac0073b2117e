import { randomUUID } from 'node:crypto';
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import type { LifecycleFields } from '../domain/subscription-lifecycle.ts';
import { logError } from '../observability/telemetry.ts';
import { createOnly, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';

/** Items of one TransactWriteItems. */
export type TransactItems = Parameters<typeof transact>[1];

import { keyId, readMany } from './catalog.ts';
import {
  countShard,
  delistedWrites,
  type Listing,
  type ListPage,
  listedKeys,
  listedWrites,
  listPage,
  ReadBudget,
  relistedWrites,
  type SegmentFilter,
  type SortCriterion,
  segmentRegistryKey,
  segmentRegistryWrite,
} from './listing.ts';
import {
  item,
  record,
  type StoredSubscription,
  type SubscriptionRecord,
  storedSubscription,
  subscriptionRecord,
} from './records.ts';
import {
  attr,
  DUE_SHARDS,
  dueIndex,
  dueKeys,
  gsi1,
  indexNames,
  type Key,
  keys,
  LIST_COUNT_SHARDS,
  type ListPartition,
  ownerKeys,
  subscriptionListOwners,
} from './table.ts';

// ---------------------------------------------------------------------------
// Lists: every subscription is listed in its organization's list and in the lists of its customer,
// its product, and its customer and product together, so that each filter is a key, never a filter
// over an organization's list. Each list is segmented by status and amount (shared/data/listing.ts):
// `active` chooses segments, and sorting by status or amount orders segments.
//
// No item that every signup of an organization (or of one product) touches is in a subscription's
// transaction, so that concurrent signups never conflict (issue 25): the lists' counts are kept
// from the table stream (`counts: 'stream'`, `shared/data/subscription-counts.ts`), the product is
// read (strongly consistent) before the transaction instead of checked in it, and the registry item
// of a segment of the organization's and the product's lists is put after the transaction succeeded,
// only when it was missing (`registerSharedSegments`): a refused write leaves nothing behind. The
// customer's own lists' registry items are written in the transaction (only that customer's writes
// share them).
//
// The organization's and the product's lists are **sharded** (issue 25, "writes that spread"): a
// subscription's entries, its segment's registry item and its count shard (the stream's) are in
// shard k = `countShard(id)` of each (`LIST#SUBSCRIPTION#<org>#S<k>`,
// `LIST#SUBSCRIPTION-PRODUCT#<org>#<product>#S<k>`), so one tenant's (or one product's) signups
// spread over 16 partitions; in shard k only the count items `#COUNT#<segment>#<k>` are written.
// A page reads the 16 shards and the unsharded partition as its sources (`subscriptionListSources`), merged in
// memory as the lists of many organizations are. Subscriptions written before the shards carry no
// `list_layout` and stay in the unsharded partitions (their changes relist them there) until
// `npm run admin -- subscription migrate-lists` moves them (`moveSubscriptionToShards`).
// ---------------------------------------------------------------------------

export type SubscriptionSortField = 'started_at' | 'current_period_end' | 'created_at' | 'status' | 'amount';

const sortFields: Listing<StoredSubscription, SubscriptionSortField>['fields'] = {
  started_at: (s) => ({ time: s.started_at }),
  current_period_end: (s) => ({ time: s.current_period_end }),
  created_at: (s) => ({ time: s.created_at }),
  status: (s) => ({ choice: s.status }),
  amount: (s) => ({ integer: s.amount }),
};

/**
 * The largest subscription item, in bytes (50 metadata pairs at their limits, measured by
 * `test/integration/list-bounds.test.ts`): the read bound's worst case per record of a page.
 */
export const SUBSCRIPTION_ITEM_BYTES = 110 * 1024;

const subscriptionListing = (
  partition: ListPartition,
  owner: (s: StoredSubscription) => string,
): Listing<StoredSubscription, SubscriptionSortField> => ({
  partition,
  entity: 'subscription_entry',
  owner,
  fields: sortFields,
  segments: ['status', 'amount'],
  counts: 'stream',
  slim: {
    attributes: [
      'organization_id',
      'customer_id',
      'product_id',
      'started_at',
      'current_period_end',
      'created_at',
      'status',
      'amount',
    ],
    recordKey: keys.subscription,
    fromItem: (stored) => record<StoredSubscription>(stored),
    maxBytes: SUBSCRIPTION_ITEM_BYTES,
  },
});

/** The shards of an organization's and of a product's subscription list (see above). */
export const SUBSCRIPTION_LIST_SHARDS = LIST_COUNT_SHARDS;

/**
 * The owner of a subscription's entries in a sharded list (`list`: the organization's or the
 * product's owner string): its shard `<list>#S<k>`, or for a subscription written before the shards
 * (no `list_layout`) the unsharded list itself.
 */
const shardOf = (list: string, s: Pick<StoredSubscription, 'id' | 'list_layout'>): string =>
  s.list_layout === 'sharded' ? `${list}#S${countShard(s.id)}` : list;

/**
 * The sources a page of a sharded list reads (`list`: an organization's or a product's owner
 * string): its unsharded partition and its 16 shards.
 */
export const subscriptionListSources = (list: string): string[] => [
  list,
  ...Array.from({ length: SUBSCRIPTION_LIST_SHARDS }, (_, k) => `${list}#S${k}`),
];

export const subscriptionListings = {
  organization: subscriptionListing('subscriptionList', (s) => shardOf(s.organization_id, s)),
  customer: subscriptionListing('subscriptionCustomerList', (s) =>
    subscriptionListOwners.customer(s.organization_id, s.customer_id),
  ),
  product: subscriptionListing('subscriptionProductList', (s) =>
    shardOf(subscriptionListOwners.product(s.organization_id, s.product_id), s),
  ),
  customerProduct: subscriptionListing('subscriptionCustomerProductList', (s) =>
    subscriptionListOwners.customerProduct(s.organization_id, s.customer_id, s.product_id),
  ),
} as const;

export type SubscriptionListScope = keyof typeof subscriptionListings;

const everyListing = Object.values(subscriptionListings);

/**
 * The keys a subscription's own writes occupy in its four lists, in the state given: its entries and
 * its segment's registry items (the counts are the stream projection's, `subscription-counts.ts`).
 */
export const subscriptionListKeys = (subscription: StoredSubscription) =>
  everyListing.flatMap((listing) => [
    ...listedKeys(listing, subscription),
    segmentRegistryKey(listing, subscription),
  ]);

/** The lists every signup of an organization, or of one product, shares. */
const sharedListings = [subscriptionListings.organization, subscriptionListings.product];
/** The lists only one customer's subscriptions share. */
const customerListings = [subscriptionListings.customer, subscriptionListings.customerProduct];

/** The registry items of the subscription's segment in its organization's and its product's lists. */
export const sharedSegmentKeys = (subscription: CountedPlace): Key[] =>
  sharedListings.map((listing) => segmentRegistryKey(listing, subscription as StoredSubscription));

/**
 * Whose counts a subscription's item is in (issue 25's move to counts from the stream). Each write of
 * this code sets `counts_change` to the write's `change_id` (`'created'` on the create, which sets
 * none): an image whose `counts_change` is its own `change_id` was written by code that leaves the
 * counts to the stream. Any other image (no `counts_change`: a subscription of a table that predates
 * the stream's counts; or one a write of the older code changed since, `change_id` moved on) was
 * counted by that write's own transaction, where it says (`shared/data/subscription-counts.ts`).
 */
export const COUNTS_CHANGE = 'counts_change';
/** The `counts_change` of a create (which sets no `change_id`). */
export const CREATED_CHANGE = 'created';
/**
 * On this code's first change of a subscription its transactions counted (an image not
 * `streamCounted`): where they counted it, for the projection to move it from when it holds no marker
 * for the subscription yet (the item of a table written before the stream kept the counts).
 */
export const COUNTED_FROM = 'counted_from';

/**
 * What decides where a subscription is counted: its lists' owners, its segment, its id (its shard),
 * and whether its organization's and product's lists are sharded (`list_layout`).
 */
export type CountedPlace = Pick<
  StoredSubscription,
  'id' | 'organization_id' | 'customer_id' | 'product_id' | 'status' | 'amount' | 'list_layout'
>;

export const countedPlace = (s: CountedPlace): CountedPlace => ({
  id: s.id,
  organization_id: s.organization_id,
  customer_id: s.customer_id,
  product_id: s.product_id,
  status: s.status,
  amount: s.amount,
  // Absent before the shards (a marker written then has none: the same place).
  ...(s.list_layout === 'sharded' ? { list_layout: s.list_layout } : {}),
});

/** Written by code whose counts the stream keeps (see `COUNTS_CHANGE`). */
export function streamCounted(image: object): boolean {
  const { change_id, [COUNTS_CHANGE]: counts } = image as Record<string, unknown>;
  return typeof counts === 'string' && counts === (change_id ?? CREATED_CHANGE);
}

/**
 * Which of the registry items of the subscription's segment in its organization's and its product's
 * lists exist: one eventually consistent BatchGetItem (a registry item is never removed, so an item
 * seen is there; one not seen is written again after the change, which changes nothing).
 */
async function registeredSharedSegments(
  table: Table,
  subscription: StoredSubscription,
): Promise<ReadonlySet<string>> {
  const result = await run(() =>
    table.doc.send(
      new BatchGetCommand({ RequestItems: { [table.name]: { Keys: sharedSegmentKeys(subscription) } } }),
    ),
  );
  return new Set((result.Responses?.[table.name] ?? []).map((stored) => keyId(stored as Key)));
}

/**
 * The registry items of the subscription's segment in its organization's and its product's lists
 * (`shared/data/listing.ts`) that `present` (`keyId`s, read before the write) lacks, put after the
 * write that added the segment's first entry succeeded: a refused write leaves nothing behind, and
 * no signup's transaction holds an item every signup of the organization or the product shares.
 *
 * Until they are put (a moment after the transaction; the caller answers after), a page of those
 * lists does not read the new segment. A failure here is logged, not answered: the subscription is
 * written, and the stream's projection registers the segment anyway when it counts the subscription
 * (a count shard carries the segment as a registry item does: `shared/data/subscription-counts.ts`),
 * within the counts' freshness (docs/data-model.md, "Subscription counts"); a crash between the two
 * is repaired the same way.
 */
async function registerSharedSegments(
  table: Table,
  subscription: StoredSubscription,
  present: ReadonlySet<string>,
): Promise<void> {
  const wanted = sharedSegmentKeys(subscription);
  const missing = sharedListings.filter((_, i) => !present.has(keyId(wanted[i] as Key)));
  try {
    await Promise.all(
      missing.map((listing) =>
        run(() => table.doc.send(new PutCommand(segmentRegistryWrite(table, listing, subscription).Put))),
      ),
    );
  } catch (error) {
    logError('subscription written but its segment not registered; the stream projection will', {
      subscription_id: subscription.id,
      name: (error as Error).name,
    });
  }
}

/**
 * Writes a subscription and lists it (its entries; the counts follow from the stream) in one
 * transaction that re-checks the customer (live, in the product's organization): a concurrent delete
 * of the customer cancels the write (ConditionFailed). The product is not checked here: every signup
 * to a product would hold its item, and concurrent signups would conflict. The service read it
 * (strongly consistent) just before: live and not archived. Ordering against a concurrent archive or
 * delete of the product: a create whose read began after the archive (or delete) was written is
 * refused; one whose read came first may still be written after it, and counts as made before it
 * (as if it had been answered a moment earlier). Nothing is ever created for a product that was
 * already archived or deleted when the create began (docs/api.md, "Create Subscription and a
 * concurrent archive"). `registered`: which of `sharedSegmentKeys` the caller found (read with the
 * product), else they are read here; the missing ones are put once the transaction succeeded.
 */
export async function insertSubscription(
  table: Table,
  subscription: SubscriptionRecord,
  outbox: TransactItems = [],
  registered?: ReadonlySet<string>,
): Promise<void> {
  const owner = ownerKeys.customer(subscription.customer_id);
  const stored = storedSubscription({ ...subscription, list_layout: 'sharded' });
  const present = registered ?? (await registeredSharedSegments(table, stored));
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(
          {
            ...keys.subscription(subscription.id),
            ...gsi1.ownedBy(owner, 'SUBSCRIPTION', subscription.created_at, subscription.id),
            ...dueKeys(subscription.id, subscription.current_period_end),
          },
          'subscription',
          { ...stored, [COUNTS_CHANGE]: CREATED_CHANGE },
        ),
      ),
    },
    {
      ConditionCheck: {
        TableName: table.name,
        Key: keys.customer(subscription.customer_id),
        ConditionExpression:
          'attribute_exists(PK) AND deleted_at = :null AND organization_id = :organization',
        ExpressionAttributeValues: { ':null': null, ':organization': subscription.organization_id },
      },
    },
    ...customerListings.map((listing) => segmentRegistryWrite(table, listing, stored)),
    ...everyListing.flatMap((listing) => listedWrites(table, listing, stored)),
    ...outbox,
  ]);
  await registerSharedSegments(table, stored, present);
}

/** A stored subscription (strongly consistent), its metadata parsed back from the JSON text it is kept as. */
export async function getSubscription(table: Table, id: string): Promise<SubscriptionRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.subscription(id), ConsistentRead: true }),
    ),
  );
  return result.Item ? subscriptionRecord(result.Item) : undefined;
}

/**
 * Writes a change of a subscription and relists it, in one transaction conditioned on the
 * subscription being exactly as it was read (its `change_id`, a random id every write sets, and its
 * `modified_at`): of two concurrent changes one wins, the other finds the condition failed
 * (ConditionFailed) and may be re-decided on fresh data. The SDK retries a transaction whose answer
 * was lost with the same client token, and a retry that finds its own `change_id` stored is our own
 * write, not a conflict. Answers the subscription as now stored.
 *
 * This one transaction is where a change's webhook events are written (the outbox): `also`
 * builds them from the subscription as written, so a change and its events are stored together or
 * not at all. The lists' counts are not written here: the stream's projection moves them
 * (`shared/data/subscription-counts.ts`); a change that moves the subscription to another segment
 * reads whether that segment is registered first, and registers it once the transaction succeeded
 * (`registerSharedSegments`; the customer's lists in the transaction).
 */
export async function writeSubscriptionChange(
  table: Table,
  before: SubscriptionRecord,
  change: Partial<SubscriptionRecord>,
  now: string,
  also: (after: SubscriptionRecord) => TransactItems = () => [],
): Promise<SubscriptionRecord> {
  const changeId = randomUUID();
  // The item's own bookkeeping of whose counts it is in stays out of the copies (entries, events).
  const {
    [COUNTS_CHANGE]: _counts,
    [COUNTED_FROM]: _from,
    ...previous
  } = before as SubscriptionRecord & Record<string, unknown>;
  const after: SubscriptionRecord = { ...previous, ...change, modified_at: now, change_id: changeId };
  // Counted by its own transactions so far (a subscription of a table older than the stream's
  // counts): where they counted it goes with this write, for the projection (`COUNTED_FROM`).
  const countedFrom = streamCounted(before) ? undefined : countedPlace(storedSubscription(before));
  const fields = Object.keys(change) as (keyof SubscriptionRecord)[];
  const values = storedSubscription(after) as unknown as Record<string, unknown>;
  // The due index holds live subscriptions only, at the end of their current period.
  const due = after.ended_at === null ? dueKeys(after.id, after.current_period_end) : undefined;
  const removed = [...(due ? [] : [attr.gsi2pk, attr.gsi2sk]), ...(countedFrom ? [] : [COUNTED_FROM])];
  const set = [
    ...(due ? [`${attr.gsi2pk} = :duePartition`, `${attr.gsi2sk} = :dueSort`] : []),
    `${COUNTS_CHANGE} = :change`,
    ...(countedFrom ? [`${COUNTED_FROM} = :countedFrom`] : []),
  ];
  const dueUpdate = `, ${set.join(', ')}${removed.length > 0 ? ` REMOVE ${removed.join(', ')}` : ''}`;
  // A change that moves the subscription to another segment (a revoke, an end) registers that segment
  // (read now, put after the transaction succeeded: a refused change leaves nothing).
  const storedAfter = storedSubscription(after);
  const moves =
    segmentRegistryKey(subscriptionListings.organization, storedSubscription(before)).SK !==
    segmentRegistryKey(subscriptionListings.organization, storedAfter).SK;
  const present = moves ? await registeredSharedSegments(table, storedAfter) : undefined;
  try {
    await transact(table, [
      {
        Update: {
          TableName: table.name,
          Key: keys.subscription(before.id),
          // `status` is a reserved word: every field goes through a name placeholder.
          UpdateExpression: `SET modified_at = :now, change_id = :change${fields.map((f) => `, #${f} = :${f}`).join('')}${dueUpdate}`,
          // Still where it was listed when read: the migration may have moved it to its shards since
          // (`moveSubscriptionToShards` leaves `change_id` as it is); the change is then decided again.
          ConditionExpression:
            'attribute_exists(PK) AND modified_at = :before AND ' +
            (before.change_id === undefined
              ? 'attribute_not_exists(change_id)'
              : 'change_id = :beforeChange') +
            (before.list_layout === 'sharded' ? '' : ' AND attribute_not_exists(list_layout)'),
          ExpressionAttributeValues: {
            ':now': now,
            ':before': before.modified_at,
            ':change': changeId,
            ...(before.change_id === undefined ? {} : { ':beforeChange': before.change_id }),
            ...Object.fromEntries(fields.map((f) => [`:${f}`, values[f]])),
            ...(due ? { ':duePartition': due[attr.gsi2pk], ':dueSort': due[attr.gsi2sk] } : {}),
            ...(countedFrom ? { ':countedFrom': countedFrom } : {}),
          },
          ...(fields.length > 0
            ? { ExpressionAttributeNames: Object.fromEntries(fields.map((f) => [`#${f}`, f])) }
            : {}),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      ...(moves ? customerListings.map((listing) => segmentRegistryWrite(table, listing, storedAfter)) : []),
      ...everyListing.flatMap((listing) =>
        relistedWrites(table, listing, storedSubscription(before), storedAfter),
      ),
      ...also(after),
    ]);
  } catch (error) {
    if (!(error instanceof ConditionFailed && error.item?.change_id === changeId)) throw error;
  }
  if (present) await registerSharedSegments(table, storedAfter, present);
  return after;
}

/**
 * A subscription written before the shards (no `list_layout`) moved into its shards of its
 * organization's and its product's lists, as it is (`migrateSubscriptionLists`): one transaction
 * marks the item `list_layout = 'sharded'`, conditioned on being exactly as read (`modified_at`,
 * `change_id`) and still unmarked, deletes its entries in the unsharded partitions and writes them in
 * its shards with its segment's registry items there. `modified_at` and `change_id` stay as they
 * are (nothing the API shows changes). Its counts move from the stream, as for any change of place:
 * the item's new image names the shards (`countedPlace`); one its own transactions counted (older
 * than the stream's counts, not `streamCounted`) is handed to the stream as this code's writes are
 * (`counts_change`, and `counted_from`: where those transactions counted it). ConditionFailed when it
 * changed or moved since it was read.
 */
export async function moveSubscriptionToShards(table: Table, before: SubscriptionRecord): Promise<void> {
  const {
    [COUNTS_CHANGE]: _counts,
    [COUNTED_FROM]: _from,
    ...plain
  } = before as SubscriptionRecord & Record<string, unknown>;
  const unsharded = storedSubscription(plain as SubscriptionRecord);
  const sharded: StoredSubscription = { ...unsharded, list_layout: 'sharded' };
  const handOver = !streamCounted(before);
  await transact(table, [
    {
      Update: {
        TableName: table.name,
        Key: keys.subscription(before.id),
        UpdateExpression: `SET list_layout = :sharded${handOver ? `, ${COUNTS_CHANGE} = :counts, ${COUNTED_FROM} = :countedFrom` : ''}`,
        ConditionExpression:
          'attribute_exists(PK) AND modified_at = :read AND attribute_not_exists(list_layout) AND ' +
          (before.change_id === undefined ? 'attribute_not_exists(change_id)' : 'change_id = :change'),
        ExpressionAttributeValues: {
          ':sharded': 'sharded',
          ':read': before.modified_at,
          ...(before.change_id === undefined ? {} : { ':change': before.change_id }),
          ...(handOver
            ? { ':counts': before.change_id ?? CREATED_CHANGE, ':countedFrom': countedPlace(unsharded) }
            : {}),
        },
      },
    },
    ...sharedListings.flatMap((listing) => [
      ...delistedWrites(table, listing, unsharded),
      ...listedWrites(table, listing, sharded),
      segmentRegistryWrite(table, listing, sharded),
    ]),
  ]);
}

/**
 * A marked subscription's entries in its organization's and its product's lists made exactly those
 * of its state (`migrateSubscriptionLists`' repair): `found`, the keys of its entries there (any
 * partition, read by the caller), those not of its state deleted, its state's written, in one
 * transaction conditioned on the item being exactly as read. What it repairs: a change of a sharded
 * subscription by a function of the release before (side by side during the deployment) relisted it
 * in the unsharded partitions and left its shards' entries as they were.
 */
export async function relistInShards(
  table: Table,
  subscription: SubscriptionRecord,
  found: readonly Key[],
): Promise<void> {
  const stored = storedSubscription(subscription);
  const wanted = sharedListings.flatMap((listing) => listedWrites(table, listing, stored));
  const kept = new Set(
    wanted.map((write) => keyId(('Put' in write ? write.Put.Item : {}) as unknown as Key)),
  );
  await transact(table, [
    {
      ConditionCheck: {
        TableName: table.name,
        Key: keys.subscription(subscription.id),
        ConditionExpression:
          'modified_at = :read AND list_layout = :sharded AND ' +
          (subscription.change_id === undefined ? 'attribute_not_exists(change_id)' : 'change_id = :change'),
        ExpressionAttributeValues: {
          ':read': subscription.modified_at,
          ':sharded': 'sharded',
          ...(subscription.change_id === undefined ? {} : { ':change': subscription.change_id }),
        },
      },
    },
    ...found
      .filter((key) => !kept.has(keyId(key)))
      .map((key) => ({ Delete: { TableName: table.name, Key: { PK: key.PK, SK: key.SK } } })),
    ...wanted,
    ...sharedListings.map((listing) => segmentRegistryWrite(table, listing, stored)),
  ]);
}

/** A lifecycle change (cancel, uncancel, revoke): `writeSubscriptionChange` of those fields. */
export const updateSubscriptionLifecycle = (
  table: Table,
  before: SubscriptionRecord,
  change: LifecycleFields,
  now: string,
  also?: (after: SubscriptionRecord) => TransactItems,
): Promise<SubscriptionRecord> => writeSubscriptionChange(table, before, change, now, also);

/**
 * A page of the subscriptions in the given lists (owners of one scope), in the requested order,
 * with the statuses `statuses` keeps.
 */
export async function listSubscriptionPage(
  table: Table,
  scope: SubscriptionListScope,
  owners: readonly string[],
  criteria: readonly SortCriterion<SubscriptionSortField>[],
  offset: number,
  limit: number,
  statuses: SegmentFilter<SubscriptionSortField>,
  /** The request's read budget, which what the page goes on to read (its meters' usage) shares. */
  budget: ReadBudget = new ReadBudget(),
): Promise<ListPage<SubscriptionRecord>> {
  const page = await listPage(
    table,
    subscriptionListings[scope],
    scope === 'organization' || scope === 'product' ? owners.flatMap(subscriptionListSources) : owners,
    criteria,
    offset,
    limit,
    {},
    statuses,
    budget,
  );
  return {
    total: page.total,
    items: page.items.map((entry) => subscriptionRecord(entry as unknown as Record<string, unknown>)),
  };
}

/**
 * The first `max` subscriptions of one customer whose status is one of `statuses`, oldest first
 * (`created_at`, then id): its list (`LIST#SUBSCRIPTION-CUSTOMER#<org>#<customer>`), the segments of
 * those statuses (their registry items are written in the customer's own transactions, so a segment
 * is found as soon as its first subscription is answered), strongly consistent, within `budget`.
 */
export async function customerSubscriptionsWithStatus(
  table: Table,
  organizationId: string,
  customerId: string,
  statuses: readonly string[],
  max: number,
  budget: ReadBudget,
): Promise<SubscriptionRecord[]> {
  const page = await listPage(
    table,
    subscriptionListings.customer,
    [subscriptionListOwners.customer(organizationId, customerId)],
    [{ field: 'created_at', descending: false }],
    0,
    max,
    {},
    (values) => {
      const status = values.status && 'choice' in values.status ? (values.status.choice ?? '') : '';
      return statuses.includes(status);
    },
    budget,
  );
  return page.items.map((entry) => subscriptionRecord(entry as unknown as Record<string, unknown>));
}

/** The due index's shards: the clock reads each. */
export const dueShards = Array.from({ length: DUE_SHARDS }, (_, shard) => shard);

/** Where a reading of one shard of the due index stopped (DynamoDB's LastEvaluatedKey). */
export type DueCursor = Record<string, unknown>;

/**
 * Ids of live subscriptions whose current period ended by `now`, from one shard of the due index,
 * earliest first, at most `limit` of them. The index is eventually consistent: a subscription it
 * names may have moved on since, so its reader decides on the item itself.
 */
export async function findDue(
  table: Table,
  shard: number,
  now: string,
  limit: number,
  after?: DueCursor,
): Promise<{ ids: string[]; next?: DueCursor }> {
  const result = await run(() =>
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        IndexName: indexNames.due,
        KeyConditionExpression: `${attr.gsi2pk} = :shard AND ${attr.gsi2sk} < :due`,
        ExpressionAttributeValues: { ':shard': dueIndex.shard(shard), ':due': dueIndex.dueBefore(now) },
        Limit: limit,
        ...(after ? { ExclusiveStartKey: after } : {}),
      }),
    ),
  );
  const ids = (result.Items ?? []).map((stored) => String(stored[attr.gsi2sk]).split('#')[1] ?? '');
  return { ids, ...(result.LastEvaluatedKey ? { next: result.LastEvaluatedKey } : {}) };
}

/** Subscriptions by id, strongly consistent, in one batch per 100. */
export async function getSubscriptions(table: Table, ids: readonly string[]): Promise<SubscriptionRecord[]> {
  const found = await readMany(
    table,
    ids.map((id) => keys.subscription(id)),
  );
  return [...found.values()].map(subscriptionRecord);
}

/** The four lists every subscription is kept in (spelled out where joined with others: a spread would keep
 * these declarations in every bundle that imports this module). */
const SUBSCRIPTION_LISTS = [
  'subscriptionList',
  'subscriptionCustomerList',
  'subscriptionProductList',
  'subscriptionCustomerProductList',
] as const;

/**
 * `registeredSharedSegments` on a change: the organization's and the product's lists read in a batch
 * (a missing registry item is put under the list grants' PutItem, which the entries already need).
 */
const registerSharedSegmentsAccess = [
  { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['subscriptionList', 'subscriptionProductList'] },
] as const;

/**
 * IAM (shared/data/grants.ts). Built by a pure call: it reads `indexNames`, and a property read
 * would otherwise keep the declarations in every bundle that imports this module.
 */
export const access = /* @__PURE__ */ (() =>
  ({
    /**
     * One transaction writes the subscription, lists it (entries, the customer's lists' segment
     * registry items) and writes its events (the outbox), and re-checks the customer; after it, the
     * shared lists' segment registry items are put when missing (read with the product,
     * `getSubscriptionInputs`).
     */
    insertSubscription: [
      {
        actions: ['dynamodb:PutItem'],
        leadingKeys: [
          'subscription',
          'subscriptionList',
          'subscriptionCustomerList',
          'subscriptionProductList',
          'subscriptionCustomerProductList',
          'event',
        ],
      },
      { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['customer'] },
    ],
    getSubscription: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['subscription'] }],
    /** The due subscriptions, in one batch. */
    getSubscriptions: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['subscription'] }],
    /**
     * A subscription change and its relisting, in one transaction (`writeSubscriptionChange`,
     * `updateSubscriptionLifecycle`): the subscription's conditional update, its list entries
     * rewritten (deleted when their key moves) and, when it moves to another segment, that segment
     * registered (read before, put after: `registerSharedSegments`; the customer's lists in the
     * transaction).
     */
    writeSubscriptionChange: [
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['subscription'] },
      { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], leadingKeys: SUBSCRIPTION_LISTS },
      ...registerSharedSegmentsAccess,
    ],
    /**
     * `updateSubscriptionLifecycle` from the portal (cancel at period end, uncancel) keeps the
     * subscription active and its period: no attribute its slim list entries keep changes, so no
     * entry is written (shared/data/listing.ts `relistedWrites`) and no count changes.
     */
    updateSubscriptionInPlace: [{ actions: ['dynamodb:UpdateItem'], leadingKeys: ['subscription'] }],
    /**
     * Per list: one Query of its segment counts, one per segment read (shared/data/listing.ts); then
     * the page's subscriptions by key (slim entries, `recordsOf`).
     */
    listSubscriptionPage: [
      { actions: ['dynamodb:Query'], leadingKeys: SUBSCRIPTION_LISTS },
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['subscription'] },
    ],
    /**
     * The portal's lists: the customer's, or its lists per product: segment counts, then segments;
     * then the page's subscriptions by key.
     */
    listCustomerSubscriptionPage: [
      {
        actions: ['dynamodb:Query'],
        leadingKeys: ['subscriptionCustomerList', 'subscriptionCustomerProductList'],
      },
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['subscription'] },
    ],
    /** A customer's list: its segment counts and registry items, then the segments kept. */
    customerSubscriptionsWithStatus: [
      { actions: ['dynamodb:Query'], leadingKeys: ['subscriptionCustomerList'] },
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['subscription'] },
    ],
    /** Each shard of the due index (keys only) (`dueShards`, `findDue`). */
    findDue: [{ actions: ['dynamodb:Query'], leadingKeys: ['due'], indexes: [indexNames.due] }],
  }) as const satisfies DataAccess)();
