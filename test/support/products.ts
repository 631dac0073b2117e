/**
 * A product's list entries as the table holds them, and the check that they are in step with the
 * product item: exactly the entries `listedWrites` would write for it now, each a copy of it.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import type { Table } from '#shared/data/dynamo.ts';
import { listedWrites } from '#shared/data/listing.ts';
import { productListing, productListOwners } from '#shared/data/products.ts';
import { record, type StoredProduct } from '#shared/data/records.ts';
import { keys, LIST_COUNT_PREFIX, listKeys } from '#shared/data/table.ts';
import { type Item, readAll } from './table-state.ts';

/**
 * Every partition an organization's products can be listed in: the whole list and each view, of
 * the old, unsharded list and of each of its 16 shards.
 */
export function productListPartitions(organizationId: string): string[] {
  return productListOwners([organizationId]).flatMap((owner) => listPartitionsOf(owner));
}

/** One owner's partitions (`<org>` or a shard `<org>#S<k>`): the whole list and each view. */
function listPartitionsOf(organizationId: string): string[] {
  const values = ['true', 'false'];
  const views = [
    [],
    ...values.map((a) => [['is_archived', a] as const]),
    ...values.map((r) => [['is_recurring', r] as const]),
    ...values.flatMap((a) => values.map((r) => [['is_archived', a] as const, ['is_recurring', r] as const])),
  ];
  return views.map((view) => listKeys.partition('productList', organizationId, view));
}

const queryAll = (table: Table, pk: string): Promise<Item[]> => readAll(table, { partitionKey: pk });

/** Every list entry of one product, in any partition of its organization. */
export async function productEntries(
  table: Table,
  organizationId: string,
  productId: string,
): Promise<Item[]> {
  return (await organizationProductEntries(table, organizationId)).filter((entry) =>
    String(entry.SK).endsWith(`#${productId}`),
  );
}

/** Every list entry of an organization's products (no count item), in any of its partitions. */
export async function organizationProductEntries(table: Table, organizationId: string): Promise<Item[]> {
  const all = await Promise.all(productListPartitions(organizationId).map((pk) => queryAll(table, pk)));
  return all.flat().filter((entry) => !String(entry.SK).startsWith(LIST_COUNT_PREFIX));
}

/** The count of one partition of an organization's product lists: the sum of its shards (0 when none). */
export async function productListCount(table: Table, pk: string): Promise<number> {
  const shards = (await queryAll(table, pk)).filter((item) => String(item.SK).startsWith(LIST_COUNT_PREFIX));
  return shards.reduce((sum, shard) => sum + Number(shard.entry_count ?? 0), 0);
}

/** The live products' entries of each partition, against its count: every partition in step. */
export async function expectCountsInStep(table: Table, organizationId: string): Promise<void> {
  for (const pk of productListPartitions(organizationId)) {
    const entries = (await queryAll(table, pk)).filter(
      (item) => !String(item.SK).startsWith(LIST_COUNT_PREFIX),
    );
    const products = new Set(entries.map((entry) => entry.id));
    const fields = Object.keys(productListing.fields).length;
    expect(entries.length, pk).toBe(products.size * fields);
    expect(await productListCount(table, pk), pk).toBe(products.size);
  }
}

/**
 * The product item, and its entries exactly those `listedWrites` writes for it as it is stored now,
 * each holding the product as stored (nothing left behind by an earlier state, nothing missing).
 * Answers the stored product, or undefined when there is none (and then no entry either).
 */
export async function expectListedInStep(
  table: Table,
  organizationId: string,
  productId: string,
): Promise<StoredProduct | undefined> {
  const found = await table.doc.send(
    new GetCommand({ TableName: table.name, Key: keys.product(productId), ConsistentRead: true }),
  );
  const entries = await productEntries(table, organizationId, productId);
  if (!found.Item) {
    expect(entries).toEqual([]);
    return undefined;
  }
  const stored = record<StoredProduct>(found.Item);
  const expected = listedWrites(table, productListing, stored)
    .flatMap((write) => ('Put' in write ? [write.Put.Item] : []))
    .map((item) => `${item.PK}|${item.SK}`)
    .sort();
  expect(entries.map((entry) => `${entry.PK}|${entry.SK}`).sort()).toEqual(expected);
  for (const entry of entries) expect(record(entry)).toEqual(stored);
  return stored;
}

/**
 * How many of these organizations' product list partitions (16 shards and the old one each) hold a
 * product of the whole list or of `view`: a page reads the entries of each of them (one Query).
 */
export async function listedPartitions(
  table: Table,
  organizationIds: readonly string[],
  view: readonly (readonly [string, string])[] = [],
): Promise<number> {
  const counts = await Promise.all(
    productListOwners(organizationIds).map((owner) =>
      productListCount(table, listKeys.partition('productList', owner, view)),
    ),
  );
  return counts.filter((count) => count > 0).length;
}
