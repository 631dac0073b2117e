/**
 * The product lists' migration (`npm run admin -- product migrate-lists`,
 * shared/data/product-list-migration.ts) on a table holding products as the code before the shards
 * wrote them (item without `list_layout`, with GSI1 keys; entries and counts in
 * `LIST#PRODUCT#<org>` and its views): before it, List Products shows old and new products alike,
 * in every order, filter, prefix and page, with the right totals, and an update of an old product
 * moves it into its shard in its own transaction; a run interrupted after two products, then run
 * again to its end, moves every one exactly once; a third run moves nothing. At every step each
 * product is listed once in every list and view it belongs to, every count equals its entries, and
 * every list answers exactly what it answered before the migration.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { transact } from '#shared/data/dynamo.ts';
import { listsMigrated } from '#shared/data/list-markers.ts';
import { listedKeys, relistedWrites } from '#shared/data/listing.ts';
import { migrateProductLists } from '#shared/data/product-list-migration.ts';
import {
  getProductForUpdate,
  legacyProductListing,
  ProductChanged,
  productListing,
  updateProductRecord,
} from '#shared/data/products.ts';
import { item, type ProductRecord, storedProduct } from '#shared/data/records.ts';
import { gsi1, keys, listKeys, ownerKeys } from '#shared/data/table.ts';
import { insertLegacyProduct, unmarkProductLists } from '../support/legacy-products.ts';
import { type PartitionReads, recordPartitionReads } from '../support/list-reads.ts';
import { expectCountsInStep, organizationProductEntries, productEntries } from '../support/products.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
let shop: { token: string; organizationId: string };
beforeAll(async () => {
  world = await createWorld('product-list-migration');
  const organization = await createOrganization(world.admin, { name: 'Old shop', defaultCurrency: 'usd' });
  const owner = await createUser(world.admin, { email: `old+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, owner.id);
  const token = (
    await createPersonalAccessToken(world.admin, {
      userId: owner.id,
      scope: 'products:read products:write',
    })
  ).token;
  shop = { token, organizationId: organization.id };
  reads = recordPartitionReads(world, 'list-products');
});
let reads: PartitionReads;
/** An old, unsharded list partition of the shop: `LIST#PRODUCT#<org>` or a view of it, not `#S<k>`. */
const isOldPartition = (pk: string) =>
  pk.startsWith(`LIST#PRODUCT#${shop.organizationId}`) && !/#S\d+(#|$)/.test(pk);
const marked = async () => {
  const found = await world.table.doc.send(
    new GetCommand({
      TableName: world.table.name,
      Key: keys.organization(shop.organizationId),
      ConsistentRead: true,
    }),
  );
  return listsMigrated(found.Item, 'products');
};
afterAll(() => world?.drop());

/** What List Products answers for the shop, for every order, filter, prefix and page asked. */
const QUERIES = [
  'limit=100',
  'sorting=name',
  'sorting=-name',
  'sorting=price_amount&sorting=-created_at',
  'sorting=-price_amount&sorting=name',
  'sorting=price_amount_type',
  'is_archived=false&sorting=name',
  'is_archived=true',
  'is_recurring=false&sorting=-price_amount',
  'is_archived=false&is_recurring=true&sorting=created_at',
  'query=old',
  'query=OLD%201&sorting=-name',
  'query=new&is_archived=false',
  ...[1, 2, 3, 4, 5].map((page) => `sorting=name&limit=3&page=${page}`),
  ...[1, 2, 3].map((page) => `is_archived=false&limit=2&page=${page}`),
];

async function lists(): Promise<Record<string, unknown>> {
  const answers: Record<string, unknown> = {};
  for (const query of QUERIES) {
    const reply = await world.call('GET', `/v1/products/?${query}`, { token: shop.token });
    expect(reply.status, query).toBe(200);
    answers[query] = reply.body;
  }
  return answers;
}

/** The product as stored, read strongly consistent. */
async function stored(id: string) {
  const found = await world.table.doc.send(
    new GetCommand({ TableName: world.table.name, Key: keys.product(id), ConsistentRead: true }),
  );
  return found.Item;
}

/**
 * Each product's entries exactly where its layout puts them (its shard when marked, the old
 * partitions when not: `listedKeys` of that listing, nothing anywhere else), every partition's
 * count equal to its products.
 */
async function expectListed(ids: readonly string[]) {
  // Every entry of the shop, read once (68 partitions).
  const everything = await organizationProductEntries(world.table, shop.organizationId);
  for (const id of ids) {
    const item = await stored(id);
    if (!item) throw new Error(`product ${id} missing`);
    const { product } = await getProductForUpdate(world.table, id, []);
    const listing = item.list_layout === 'sharded' ? productListing : legacyProductListing;
    const expected = listedKeys(listing, storedProduct(product as ProductRecord))
      .filter((key) => !key.SK.startsWith('#COUNT#'))
      .map((key) => `${key.PK}|${key.SK}`)
      .sort();
    const entries = everything.filter((entry) => String(entry.SK).endsWith(`#${id}`));
    expect(entries.map((entry) => `${entry.PK}|${entry.SK}`).sort(), id).toEqual(expected);
  }
  await expectCountsInStep(world.table, shop.organizationId);
}

/** The ids of every product the shop lists. */
const shopIds = async () => [
  ...new Set((await organizationProductEntries(world.table, shop.organizationId)).map((e) => String(e.id))),
];

const layouts = async (ids: readonly string[]) => {
  const items = await Promise.all(ids.map(stored));
  return {
    sharded: items.filter((item) => item?.list_layout === 'sharded').length,
    legacy: items.filter((item) => item?.list_layout === undefined).length,
    withGsi1: items.filter((item) => item?.GSI1PK !== undefined).length,
  };
};

describe('product migrate-lists', () => {
  it('old products are listed beside new ones, moved by an update, then all moved by the migration, interrupted and run again: every list the same before and after', async () => {
    const old: ProductRecord[] = [];
    for (let n = 0; n < 8; n++) {
      old.push(
        await insertLegacyProduct(world.table, shop.organizationId, n, {
          recurring: n % 3 !== 0,
          archived: n % 4 === 1,
          amount: (n % 3) * 500,
        }),
      );
    }
    const fresh: string[] = [];
    for (let n = 0; n < 3; n++) {
      const reply = await world.call('POST', '/v1/products/', {
        token: shop.token,
        body: {
          name: `New ${n}`,
          ...(n === 1 ? {} : { recurring_interval: 'month' }),
          prices: [{ amount_type: 'fixed', price_amount: 250 * n }],
        },
      });
      expect(reply.status).toBe(201);
      fresh.push(reply.body.id as string);
    }
    const all = [...old.map((p) => p.id), ...fresh];
    await expectListed(all);
    expect(await layouts(all)).toEqual({ sharded: 3, legacy: 8, withGsi1: 8 });
    const first = await lists();
    // Old and new products, read from both layouts, in one list.
    expect((first['limit=100'] as { pagination: unknown }).pagination).toEqual({
      total_count: 11,
      max_page: 1,
    });
    expect((first['is_archived=true'] as { items: unknown[] }).items).toHaveLength(2);

    // An update of an old product (archived: it changes views) relists it in its shard, in the same transaction.
    const [changed, ...rest] = old as [ProductRecord, ...ProductRecord[]];
    const patched = await world.call('PATCH', `/v1/products/${changed.id}`, {
      token: shop.token,
      body: { name: 'Old 0, changed', is_archived: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).not.toHaveProperty('list_layout');
    await expectListed(all);
    expect(await layouts(all)).toEqual({ sharded: 4, legacy: 7, withGsi1: 7 });
    const before = await lists();
    expect((before['is_archived=true'] as { items: { id: string }[] }).items.map((p) => p.id)).toContain(
      changed.id,
    );
    expect((before['query=old'] as { pagination: unknown }).pagination).toEqual({
      total_count: 8,
      max_page: 1,
    });

    // Unmarked (an organization from before the marker): its pages read the old partitions too.
    expect(reads.partitions().some(isOldPartition)).toBe(true);

    // Interrupted after two products: two moved, the rest still listed where they were; none marked.
    expect(await migrateProductLists(world.table, { stopAfter: 2 })).toEqual({
      migrated: 2,
      skipped: 0,
      repaired: 0,
      busy: [],
      organizations: 0,
      unmarked: [],
    });
    expect(await marked()).toBe(false);
    await expectListed(all);
    expect(await layouts(all)).toEqual({ sharded: 6, legacy: 5, withGsi1: 5 });
    expect(await lists()).toEqual(before);

    // Run again: the rest moved; the old partitions keep only their counts, at 0: marked.
    expect(await migrateProductLists(world.table)).toEqual({
      migrated: 5,
      skipped: 0,
      repaired: 0,
      busy: [],
      organizations: 1,
      unmarked: [],
    });
    expect(await marked()).toBe(true);
    await expectListed(all);
    expect(await layouts(all)).toEqual({ sharded: 11, legacy: 0, withGsi1: 0 });
    // Marked: every answer the same, and no page (order, view, prefix) reads an old partition.
    reads.reset();
    expect(await lists()).toEqual(before);
    expect(reads.partitions().filter((pk) => pk.startsWith('LIST#PRODUCT#')).length).toBeGreaterThan(0);
    expect(reads.partitions().filter(isOldPartition)).toEqual([]);
    for (const product of rest) {
      const entries = await productEntries(world.table, shop.organizationId, product.id);
      expect(entries.every((entry) => /#S\d+(#|$)/.test(String(entry.PK)))).toBe(true);
    }

    // A third run finds nothing to move; the lists are unchanged.
    expect(await migrateProductLists(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      repaired: 0,
      busy: [],
      organizations: 0,
      unmarked: [],
    });
    await expectListed(all);
    expect(await lists()).toEqual(before);

    // A moved product updates as any other.
    const [, movedOne] = rest as [ProductRecord, ProductRecord];
    const renamed = await world.call('PATCH', `/v1/products/${movedOne.id}`, {
      token: shop.token,
      body: { name: 'Zed', is_archived: true },
    });
    expect(renamed.status).toBe(200);
    await expectListed(all);
    const after = await lists();
    expect((after['sorting=-name'] as { items: { name: string }[] }).items[0]?.name).toBe('Zed');
    expect((after['is_archived=true'] as { pagination: unknown }).pagination).toEqual({
      total_count: 4,
      max_page: 1,
    });
  });

  it('a moved product that a function of the release before updated (relisted in the old partitions) is put right by the run', async () => {
    const created = await world.call('POST', '/v1/products/', {
      token: shop.token,
      body: {
        name: 'Stray',
        recurring_interval: 'month',
        prices: [{ amount_type: 'fixed', price_amount: 9 }],
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const lists0 = await lists();
    // What Update Product of the release before wrote: the item (its record, list_layout included,
    // put back with GSI1 keys), its entries relisted in the old partitions from the state it read,
    // the view it left counted down there and the one it entered counted up; the shard untouched.
    const { product: before } = await getProductForUpdate(world.table, id, []);
    if (!before) throw new Error('no product');
    // During a roll-out, in an organization not yet marked (a marked one's pages would not show the
    // stray until the run that follows the deployment).
    await unmarkProductLists(world.table, shop.organizationId);
    const after: ProductRecord = {
      ...before,
      name: 'Stray, archived by the old release',
      is_archived: true,
      modified_at: new Date().toISOString(),
      version: (before.version ?? 0) + 1,
    };
    await transact(world.table, [
      {
        Put: {
          TableName: world.table.name,
          Item: item(
            {
              ...keys.product(id),
              ...gsi1.ownedBy(ownerKeys.organization(shop.organizationId), 'PRODUCT', after.created_at, id),
            },
            'product',
            storedProduct(after),
          ),
        },
      },
      ...relistedWrites(world.table, legacyProductListing, storedProduct(before), storedProduct(after)),
    ]);
    // Meanwhile listed in both places: as it was in its shard, as it is in the old partitions (the
    // archived view's count there up by one, the live view's down by one).
    const strayEntries = (await productEntries(world.table, shop.organizationId, id)).filter(
      (entry) => !/#S\d+(#|$)/.test(String(entry.PK)),
    );
    expect(strayEntries).toHaveLength(16);
    const archivedView = await world.call('GET', '/v1/products/?is_archived=true&limit=100', {
      token: shop.token,
    });
    expect((archivedView.body.items as { id: string }[]).map((p) => p.id)).toContain(id);

    const report = await migrateProductLists(world.table);
    await expectListed([...(await shopIds()), id]);
    const now = await lists();
    const all = (now['limit=100'] as { items: { id: string; name: string; is_archived: boolean }[] }).items;
    expect(all.filter((p) => p.id === id)).toEqual([
      expect.objectContaining({ name: 'Stray, archived by the old release', is_archived: true }),
    ]);
    expect((now['limit=100'] as { pagination: unknown }).pagination).toEqual(
      (lists0['limit=100'] as { pagination: unknown }).pagination,
    );
    expect((await stored(id))?.GSI1PK).toBeUndefined();
    // Put right, the old partitions hold nothing again: the same run marks the shop.
    expect(report).toEqual({
      migrated: 0,
      skipped: 0,
      repaired: 1,
      busy: [],
      organizations: 1,
      unmarked: [],
    });
    expect(await marked()).toBe(true);
    expect(await migrateProductLists(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      repaired: 0,
      busy: [],
      organizations: 0,
      unmarked: [],
    });
  });

  it('an update that read an old product before the migration moved it is decided again (no double listing)', async () => {
    const product = await insertLegacyProduct(world.table, shop.organizationId, 40);
    const report = await migrateProductLists(world.table);
    expect(report.migrated).toBe(1);
    const after = { ...product, name: 'Late', modified_at: new Date().toISOString() };
    await expect(updateProductRecord(world.table, product, after)).rejects.toBeInstanceOf(ProductChanged);
    const entries = await productEntries(world.table, shop.organizationId, product.id);
    // Once in its shard's whole list and the 3 views it belongs to: 16 entries, none in the old partitions.
    expect(entries).toHaveLength(16);
    expect(entries.every((entry) => /#S\d+(#|$)/.test(String(entry.PK)))).toBe(true);
    await expectCountsInStep(world.table, shop.organizationId);
  });

  it('marks an organization only once its old partitions hold nothing: not while a count there is above 0', async () => {
    const organization = await createOrganization(world.admin, { name: 'Counted', defaultCurrency: 'usd' });
    const isMarked = async () =>
      listsMigrated(
        (
          await world.table.doc.send(
            new GetCommand({
              TableName: world.table.name,
              Key: keys.organization(organization.id),
              ConsistentRead: true,
            }),
          )
        ).Item,
        'products',
      );
    // A new organization is marked at its creation.
    expect(await isMarked()).toBe(true);
    // From before the marker, one count of a view's old partition still at 1 (what its page's
    // total_count sums): something is left.
    await unmarkProductLists(world.table, organization.id);
    const count = listKeys.count('productList', organization.id, 3, [['is_archived', 'true']]);
    const setCount = (n: number) =>
      world.table.doc.send(
        new PutCommand({
          TableName: world.table.name,
          Item: { ...count, entity: 'list_count', entry_count: n },
        }),
      );
    await setCount(1);
    expect((await migrateProductLists(world.table)).unmarked).toContain(organization.id);
    expect(await isMarked()).toBe(false);
    await setCount(0);
    const report = await migrateProductLists(world.table);
    expect(report.unmarked).not.toContain(organization.id);
    expect(await isMarked()).toBe(true);
  });
});
