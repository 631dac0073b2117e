/**
 * The customer lists' migration (`npm run admin -- customer migrate-lists`,
 * shared/data/customer-list-migration.ts) on a table holding customers as the code before the
 * shards wrote them (item without `list_layout`, entries and count in `LIST#CUSTOMER#<org>`):
 * before it, the list shows old and new customers alike with the right total, and a change or a
 * deletion of an old customer moves or removes its old entries in its own transaction; a run
 * interrupted after two customers, then run again to its end, moves every one exactly once; a third
 * run moves nothing. At every step each live customer is listed once, and the counts add up.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { migrateCustomerLists } from '#shared/data/customer-list-migration.ts';
import {
  customerEntry,
  customerListing,
  customerListOwners,
  legacyCustomerListing,
} from '#shared/data/customers.ts';
import { transact } from '#shared/data/dynamo.ts';
import { listsMigrated } from '#shared/data/list-markers.ts';
import { listedWrites } from '#shared/data/listing.ts';
import type { CustomerRecord } from '#shared/data/records.ts';
import { keys, LIST_COUNT_PREFIX, listKeys } from '#shared/data/table.ts';
import { insertLegacyCustomer } from '../support/legacy-customers.ts';
import { type PartitionReads, recordPartitionReads } from '../support/list-reads.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
let shop: { token: string; organizationId: string };
beforeAll(async () => {
  world = await createWorld('customer-list-migration');
  const organization = await createOrganization(world.admin, { name: 'Old shop', defaultCurrency: 'usd' });
  const owner = await createUser(world.admin, { email: `old+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, owner.id);
  const token = (
    await createPersonalAccessToken(world.admin, {
      userId: owner.id,
      scope: 'customers:read customers:write',
    })
  ).token;
  shop = { token, organizationId: organization.id };
  reads = recordPartitionReads(world, 'list-customers');
});
afterAll(() => world?.drop());

const legacyCustomer = (n: number) => insertLegacyCustomer(world.table, shop.organizationId, n);
const oldPartition = () => listKeys.partition(customerListing.partition, shop.organizationId);
const marked = async (organizationId = shop.organizationId) => {
  const found = await world.table.doc.send(
    new GetCommand({
      TableName: world.table.name,
      Key: keys.organization(organizationId),
      ConsistentRead: true,
    }),
  );
  return listsMigrated(found.Item, 'customers');
};
let reads: PartitionReads;

/** Every entry and count of the shop's customer list partitions: the old one and the 16 shards. */
async function partitionsOfShop() {
  const owners = customerListOwners([shop.organizationId]);
  const read = await Promise.all(
    owners.map(async (owner) => {
      const found = await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': listKeys.partition(customerListing.partition, owner) },
          ConsistentRead: true,
        }),
      );
      const items = found.Items ?? [];
      const counted = items
        .filter((entry) => String(entry.SK).startsWith(LIST_COUNT_PREFIX))
        .reduce((sum, entry) => sum + Number(entry.entry_count ?? 0), 0);
      const ids = items.filter((e) => String(e.SK).startsWith('created_at#')).map((e) => String(e.id));
      return { owner, counted, ids, entries: items.filter((e) => e.entity === 'customer_entry').length };
    }),
  );
  const [old, ...shards] = read as [(typeof read)[number], ...typeof read];
  return { old, shards };
}

/** Each id once in the list partitions (4 entries, in the right place), and every count equal to its entries. */
async function expectListed(ids: readonly string[]) {
  const { old, shards } = await partitionsOfShop();
  const all = [...old.ids, ...shards.flatMap((shard) => shard.ids)];
  expect([...all].sort()).toEqual([...ids].sort());
  for (const part of [old, ...shards]) {
    expect(part.counted).toBe(part.ids.length);
    expect(part.entries).toBe(4 * part.ids.length);
  }
  for (const shard of shards) {
    for (const id of shard.ids)
      expect(customerListing.owner({ id, organization_id: shop.organizationId } as never)).toBe(shard.owner);
  }
  // What List Customers answers: every live customer once, the total right.
  const reply = await world.call('GET', '/v1/customers/?limit=100&sorting=email', { token: shop.token });
  expect(reply.status).toBe(200);
  expect(reply.body.pagination.total_count).toBe(ids.length);
  expect((reply.body.items as { id: string }[]).map((c) => c.id).sort()).toEqual([...ids].sort());
  return { old, shards };
}

describe('customer migrate-lists', () => {
  it('old customers are listed beside new ones, moved by a change, removed by a delete, then all moved by the migration, interrupted and run again', async () => {
    const old = [];
    for (let n = 0; n < 8; n++) old.push(await legacyCustomer(n));
    const fresh = [];
    for (let n = 0; n < 3; n++) {
      const reply = await world.call('POST', '/v1/customers/', {
        token: shop.token,
        body: { email: `new-${n}-${randomUUID().slice(0, 8)}@example.com`, name: `New ${n}` },
      });
      expect(reply.status).toBe(201);
      fresh.push(reply.body.id as string);
    }
    let live = [...old.map((c) => c.id), ...fresh];
    let state = await expectListed(live);
    expect(state.old.ids).toHaveLength(8);

    // A change of an old customer relists it in its shard, in the same transaction.
    const [changed, deleted, ...rest] = old as [CustomerRecord, CustomerRecord, ...CustomerRecord[]];
    const patched = await world.call('PATCH', `/v1/customers/${changed.id}`, {
      token: shop.token,
      body: { name: 'Old, changed' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).not.toHaveProperty('list_layout');
    state = await expectListed(live);
    expect(state.old.ids).not.toContain(changed.id);
    expect(state.old.ids).toHaveLength(7);
    // Found by its external id (its guard) and by a name query (its shard's entries).
    const byExternal = await world.call('GET', `/v1/customers/external/${changed.external_id}`, {
      token: shop.token,
    });
    expect(byExternal.body.name).toBe('Old, changed');
    const byQuery = await world.call('GET', '/v1/customers/?query=old,%20ch', { token: shop.token });
    expect((byQuery.body.items as { id: string }[]).map((c) => c.id)).toEqual([changed.id]);

    // A deletion of an old customer takes it out of the old partition and its count.
    expect((await world.call('DELETE', `/v1/customers/${deleted.id}`, { token: shop.token })).status).toBe(
      204,
    );
    live = live.filter((id) => id !== deleted.id);
    state = await expectListed(live);
    expect(state.old.ids).toHaveLength(6);

    // Interrupted after two customers: two moved, the rest still listed where they were.
    // Unmarked (an organization from before the marker): every page reads the old partition too.
    reads.reset();
    await expectListed(live);
    expect(reads.partitions()).toContain(oldPartition());

    expect(await migrateCustomerLists(world.table, { stopAfter: 2 })).toEqual({
      migrated: 2,
      skipped: 0,
      busy: [],
      organizations: 0,
      unmarked: [],
    });
    state = await expectListed(live);
    expect(state.old.ids).toHaveLength(4);
    // An interrupted run marks nothing.
    expect(await marked()).toBe(false);

    // Run again: the rest moved; the old partition keeps only its counts, at 0; the shop is marked.
    expect(await migrateCustomerLists(world.table)).toEqual({
      migrated: 4,
      skipped: 0,
      busy: [],
      organizations: 1,
      unmarked: [],
    });
    expect(await marked()).toBe(true);
    state = await expectListed(live);
    expect(state.old.ids).toHaveLength(0);
    expect(state.old.entries).toBe(0);
    // Marked: the page reads its 16 shards only, none of the old partition's 16 count items or its
    // entries, and lists the same customers (expectListed above and below).
    reads.reset();
    world.resetCount();
    await expectListed(live);
    expect(reads.partitions()).not.toContain(oldPartition());
    expect(reads.partitions().filter((pk) => pk.startsWith('LIST#CUSTOMER#'))).toHaveLength(
      16 + state.shards.filter((shard) => shard.ids.length > 0).length,
    );
    for (const customer of rest) {
      const stored = await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': keys.customer(customer.id).PK },
          ConsistentRead: true,
        }),
      );
      expect(stored.Items?.[0]?.list_layout).toBe('sharded');
    }

    // A third run finds nothing to move; the list is unchanged.
    expect(await migrateCustomerLists(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      busy: [],
      organizations: 0,
      unmarked: [],
    });
    await expectListed(live);

    // A moved customer changes and is deleted as any other.
    const [movedOne] = rest as [CustomerRecord];
    expect(
      (
        await world.call('PATCH', `/v1/customers/${movedOne.id}`, {
          token: shop.token,
          body: { name: 'Zed' },
        })
      ).status,
    ).toBe(200);
    expect((await world.call('DELETE', `/v1/customers/${movedOne.id}`, { token: shop.token })).status).toBe(
      204,
    );
    live = live.filter((id) => id !== movedOne.id);
    await expectListed(live);
  });

  it('a change that read an old customer before the migration moved it is decided again (no double count)', async () => {
    const customer = await legacyCustomer(40);
    const { writeCustomerChange } = await import('#shared/data/customers.ts');
    const before = { ...customer } as Omit<CustomerRecord, 'wallet_count'> & { wallet_count?: number };
    delete before.wallet_count;
    const report = await migrateCustomerLists(world.table);
    expect(report.migrated).toBe(1);
    const after = { ...before, name: 'Late', modified_at: new Date().toISOString() };
    await expect(writeCustomerChange(world.table, before, after)).rejects.toMatchObject({
      name: 'CustomerChanged',
    });
    const { old, shards } = await partitionsOfShop();
    expect(old.ids).not.toContain(customer.id);
    expect(shards.flatMap((s) => s.ids).filter((id) => id === customer.id)).toHaveLength(1);
  });

  it('marks an organization only once its old partition holds nothing: not while an entry is left there', async () => {
    const organization = await createOrganization(world.admin, {
      name: 'Stray shop',
      defaultCurrency: 'usd',
    });
    // A new organization is marked at its creation.
    expect(await marked(organization.id)).toBe(true);
    // From before the marker: a moved customer (in its shard) that an old-release function also
    // listed in the old partition during a roll-out. The migration cannot move it (it is marked).
    const customer = await insertLegacyCustomer(world.table, organization.id, 60, { listed: 'sharded' });
    expect(await marked(organization.id)).toBe(false);
    const stray = listedWrites(world.table, legacyCustomerListing, customerEntry(customer));
    await transact(world.table, stray);
    const report = await migrateCustomerLists(world.table);
    expect(report.unmarked).toEqual([organization.id]);
    expect(await marked(organization.id)).toBe(false);
    // Nothing left (the stray's entries and count gone): the next run marks it.
    const { DeleteCommand, UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    for (const write of stray) {
      if ('Put' in write && write.Put)
        await world.table.doc.send(
          new DeleteCommand({
            TableName: world.table.name,
            Key: { PK: write.Put.Item.PK as string, SK: write.Put.Item.SK as string },
          }),
        );
      if ('Update' in write && write.Update)
        await world.table.doc.send(
          new UpdateCommand({
            TableName: world.table.name,
            Key: write.Update.Key,
            UpdateExpression: 'SET entry_count = :zero',
            ExpressionAttributeValues: { ':zero': 0 },
          }),
        );
    }
    expect(await migrateCustomerLists(world.table)).toMatchObject({ organizations: 1, unmarked: [] });
    expect(await marked(organization.id)).toBe(true);
  });
});
