/**
 * The subscription lists' migration (`npm run admin -- subscription migrate-lists`,
 * shared/data/subscription-list-migration.ts) on a table holding subscriptions as the code before the
 * shards wrote them (item without `list_layout`; its organization's and its product's entries and
 * segment registry items in `LIST#SUBSCRIPTION#<org>` and `LIST#SUBSCRIPTION-PRODUCT#<org>#<product>`,
 * counted there by the stream's projection; one older still, counted by its own transactions):
 * before it, the lists show old and new subscriptions alike with the right totals, and a revoke of an
 * old one relists it where it is; a run interrupted after two, then run again to its end, moves every
 * one exactly once; a third run moves nothing; a change read before the move is refused and decided
 * again. At every step (the projection run, as the relay would) each subscription is listed once in
 * each list, and each partition's counts equal its entries.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
} from '#scripts/admin/commands.ts';
import { transact } from '#shared/data/dynamo.ts';
import { countWrites, delistedWrites, listedWrites, segmentRegistryWrite } from '#shared/data/listing.ts';
import { record, type StoredSubscription } from '#shared/data/records.ts';
import { migrateSubscriptionLists } from '#shared/data/subscription-list-migration.ts';
import {
  COUNTS_CHANGE,
  getSubscription,
  subscriptionListings,
  subscriptionListSources,
  writeSubscriptionChange,
} from '#shared/data/subscriptions.ts';
import { keys, LIST_COUNT_PREFIX, listKeys, subscriptionListOwners } from '#shared/data/table.ts';
import { ConditionFailed } from '#shared/domain/errors.ts';
import { projectSubscriptionCounts } from '../support/subscription-counts.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
let shop: { token: string; organizationId: string; productId: string };
beforeAll(async () => {
  world = await createWorld('subscription-list-migration');
  const organization = await createOrganization(world.admin, { name: 'Old shop', defaultCurrency: 'usd' });
  const owner = await createUser(world.admin, { email: `old+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, owner.id);
  const token = (
    await createPersonalAccessToken(world.admin, { userId: owner.id, scope: 'subscriptions:write' })
  ).token;
  const product = await createProduct(world.admin, {
    organizationId: organization.id,
    name: 'Free',
    recurringInterval: 'month',
    priceAmount: 0,
    currency: 'usd',
  });
  shop = { token, organizationId: organization.id, productId: product.id };
});
afterAll(() => world?.drop());

const shared = [subscriptionListings.organization, subscriptionListings.product] as const;

async function subscribe(): Promise<string> {
  const customer = await createCustomer(world.admin, {
    organizationId: shop.organizationId,
    email: `s-${randomUUID()}@example.com`,
  });
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: shop.token,
    body: { product_id: shop.productId, customer_id: customer.id },
  });
  expect(reply.status).toBe(201);
  return reply.body.id as string;
}

async function stored(id: string): Promise<StoredSubscription> {
  const found = await world.table.doc.send(
    new GetCommand({ TableName: world.table.name, Key: keys.subscription(id), ConsistentRead: true }),
  );
  return record<StoredSubscription>(found.Item ?? {});
}

/**
 * A subscription as the code before the shards left it, made from one written now (before the
 * projection counted it): its organization's and product's entries and registry items in the
 * unsharded partitions, no `list_layout` on the item. `countedByTransactions`: older still, from
 * before the stream's counts (no `counts_change`), counted in its four lists by its own transaction.
 */
async function asBeforeTheShards(id: string, countedByTransactions = false): Promise<void> {
  const sharded = await stored(id);
  const { list_layout: _layout, ...unsharded } = sharded;
  await transact(world.table, [
    {
      Update: {
        TableName: world.table.name,
        Key: keys.subscription(id),
        UpdateExpression: `REMOVE list_layout${countedByTransactions ? `, ${COUNTS_CHANGE}` : ''}`,
      },
    },
    ...shared.flatMap((listing) => [
      ...delistedWrites(world.table, listing, sharded),
      ...listedWrites(world.table, listing, unsharded as StoredSubscription),
      segmentRegistryWrite(world.table, listing, unsharded as StoredSubscription),
    ]),
    ...(countedByTransactions
      ? Object.values(subscriptionListings).flatMap((listing) =>
          countWrites(world.table, listing, undefined, unsharded as StoredSubscription),
        )
      : []),
  ]);
}

/**
 * A revoke as a function of the release before the shards writes it for a subscription the shards
 * hold: the item changed (its `list_layout` kept, as that code keeps attributes it does not know),
 * its entries written in the unsharded partitions (where that code lists every subscription), none
 * of its shards' entries deleted.
 */
async function revokedByTheReleaseBefore(id: string): Promise<void> {
  const before = await stored(id);
  const now = new Date().toISOString();
  const change = randomUUID();
  const { list_layout: _layout, ...unsharded } = {
    ...before,
    status: 'canceled',
    ended_at: now,
    canceled_at: now,
    modified_at: now,
  } as StoredSubscription;
  await transact(world.table, [
    {
      Update: {
        TableName: world.table.name,
        Key: keys.subscription(id),
        UpdateExpression:
          'SET #status = :canceled, ended_at = :now, canceled_at = :now, modified_at = :now, change_id = :change, counts_change = :change',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':canceled': 'canceled', ':now': now, ':change': change },
      },
    },
    ...shared.flatMap((listing) => [
      ...listedWrites(world.table, listing, unsharded as StoredSubscription),
      segmentRegistryWrite(world.table, listing, unsharded as StoredSubscription),
    ]),
  ]);
}

/** Per source of a list: the ids of its `status` entries (one per subscription) and its count. */
async function sourcesOf(list: string, partition: 'subscriptionList' | 'subscriptionProductList') {
  return Promise.all(
    subscriptionListSources(list).map(async (owner) => {
      const found = await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': listKeys.partition(partition, owner) },
          ConsistentRead: true,
        }),
      );
      const items = found.Items ?? [];
      const entries = items.filter((i) => i.entity === 'subscription_entry');
      const counted = items
        .filter((i) => String(i.SK).startsWith(LIST_COUNT_PREFIX))
        .reduce((sum, i) => sum + Number(i.entry_count ?? 0), 0);
      const ids = [...new Set(entries.map((i) => String(i.id)))];
      return { owner, ids, entries: entries.length, counted };
    }),
  );
}

/**
 * Each subscription once in the organization's and in the product's list (4 entries, in the
 * partition its layout names), each partition's counts equal to its subscriptions once projected,
 * and List Subscriptions answering them all with the right total. Answers the unsharded partitions.
 */
async function expectListed(ids: readonly string[]) {
  await projectSubscriptionCounts(world.table);
  const unsharded: Record<string, string[]> = {};
  for (const [listing, list] of [
    [subscriptionListings.organization, shop.organizationId],
    [subscriptionListings.product, subscriptionListOwners.product(shop.organizationId, shop.productId)],
  ] as const) {
    const sources = await sourcesOf(
      list,
      listing.partition as 'subscriptionList' | 'subscriptionProductList',
    );
    expect(sources.flatMap((source) => source.ids).sort()).toEqual([...ids].sort());
    for (const source of sources) {
      expect(source.entries).toBe(4 * source.ids.length);
      expect(source.counted, source.owner).toBe(source.ids.length);
      for (const id of source.ids) expect(listing.owner(await stored(id))).toBe(source.owner);
    }
    unsharded[listing.partition] = sources[0]?.ids ?? [];
  }
  for (const filter of [`organization_id=${shop.organizationId}`, `product_id=${shop.productId}`]) {
    const reply = await world.call('GET', `/v1/subscriptions/?${filter}&limit=100&sorting=-started_at`, {
      token: shop.token,
    });
    expect(reply.status).toBe(200);
    expect(reply.body.pagination.total_count).toBe(ids.length);
    expect((reply.body.items as { id: string }[]).map((s) => s.id).sort()).toEqual([...ids].sort());
  }
  return unsharded as { subscriptionList: string[]; subscriptionProductList: string[] };
}

describe('subscription migrate-lists', () => {
  it('old subscriptions are listed beside new ones, relisted in place by a revoke, then all moved by the migration, interrupted and run again', async () => {
    const old: string[] = [];
    for (let n = 0; n < 7; n++) {
      const id = await subscribe();
      // Two older still: one revoked before the migration, one handed to the stream by it.
      await asBeforeTheShards(id, n === 0 || n === 6);
      old.push(id);
    }
    const fresh: string[] = [];
    for (let n = 0; n < 3; n++) fresh.push(await subscribe());
    const all = [...old, ...fresh];
    let unsharded = await expectListed(all);
    expect(unsharded.subscriptionList.sort()).toEqual([...old].sort());
    expect(unsharded.subscriptionProductList.sort()).toEqual([...old].sort());
    for (const id of fresh) expect((await stored(id)).list_layout).toBe('sharded');

    // A revoke of an old subscription relists it where it is (the canceled segment, unsharded).
    const [revoked, raced, ...rest] = old as [string, string, ...string[]];
    const reply = await world.call('DELETE', `/v1/subscriptions/${revoked}`, { token: shop.token });
    expect(reply.status).toBe(200);
    expect(reply.body).not.toHaveProperty('list_layout');
    unsharded = await expectListed(all);
    expect(unsharded.subscriptionList).toContain(revoked);
    const active = await world.call(
      'GET',
      `/v1/subscriptions/?organization_id=${shop.organizationId}&active=true`,
      {
        token: shop.token,
      },
    );
    expect(active.body.pagination.total_count).toBe(all.length - 1);

    // A change read before the migration moved its subscription.
    const stale = await getSubscription(world.table, raced);
    if (!stale) throw new Error('no subscription');

    // Interrupted after two, then run again to its end: each moved once.
    const first = await migrateSubscriptionLists(world.table, { stopAfter: 2 });
    expect(first).toEqual({ migrated: 2, skipped: 0, repaired: 0, busy: [] });
    unsharded = await expectListed(all);
    expect(unsharded.subscriptionList).toHaveLength(old.length - 2);
    const second = await migrateSubscriptionLists(world.table);
    expect(second).toEqual({ migrated: old.length - 2, skipped: 0, repaired: 0, busy: [] });
    unsharded = await expectListed(all);
    expect(unsharded).toEqual({ subscriptionList: [], subscriptionProductList: [] });
    for (const id of all) expect((await stored(id)).list_layout).toBe('sharded');
    // The pre-stream one is handed to the stream: counted from where its transactions counted it.
    expect(((await stored(old[6] as string)) as Record<string, unknown>)[COUNTS_CHANGE]).toBe('created');
    expect(await migrateSubscriptionLists(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      repaired: 0,
      busy: [],
    });

    // A function of the release before (side by side during the deployment) revokes a subscription
    // written in the shards: it relists it in the unsharded partitions, its shards' entries left.
    const stray = fresh[0] as string;
    await revokedByTheReleaseBefore(stray);
    expect((await sourcesOf(shop.organizationId, 'subscriptionList'))[0]?.ids).toEqual([stray]);
    expect(await migrateSubscriptionLists(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      repaired: 1,
      busy: [],
    });
    unsharded = await expectListed(all);
    expect(unsharded).toEqual({ subscriptionList: [], subscriptionProductList: [] });
    expect(await migrateSubscriptionLists(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      repaired: 0,
      busy: [],
    });

    // The stale change is refused (it would relist the subscription in the unsharded partitions);
    // decided again on what is stored now, it lands in the shards.
    await expect(
      writeSubscriptionChange(world.table, stale, { cancel_at_period_end: true }, new Date().toISOString()),
    ).rejects.toBeInstanceOf(ConditionFailed);
    const again = await world.call('DELETE', `/v1/subscriptions/${raced}`, { token: shop.token });
    expect(again.status).toBe(200);
    unsharded = await expectListed(all);
    expect(unsharded).toEqual({ subscriptionList: [], subscriptionProductList: [] });
    const ended = await world.call('GET', `/v1/subscriptions/?product_id=${shop.productId}&active=false`, {
      token: shop.token,
    });
    expect((ended.body.items as { id: string }[]).map((s) => s.id).sort()).toEqual(
      [revoked, raced, stray].sort(),
    );
    expect(rest).toHaveLength(old.length - 2);
  });
});
