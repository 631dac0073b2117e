/**
 * Products: the product item (`PRODUCT#<id>`, prices inside) and its entries in its shard of the
 * organization's product list (`shared/data/listing.ts`; `productListing`, 16 shards by id so that
 * one tenant's creates spread over 16 partitions), always written in one transaction.
 */
import { ConditionFailed } from '../domain/errors.ts';
import { keyId, readMany } from './catalog.ts';
import { createOnly, type Table, type TransactItem, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { markedOrganizations } from './list-markers.ts';
import {
  countWrites,
  delistedWrites,
  ENTRY_BYTES,
  type Listing,
  type ListPage,
  listedWrites,
  listRecordPage,
  listShard,
  listShardOwners,
  type ReadBudget,
  type RecordPageQuery,
  readKeysWithinBudget,
  relistedWrites,
  shardedCountItems,
} from './listing.ts';
import {
  type FixedPriceRecord,
  item,
  type OrganizationRecord,
  type ProductRecord,
  productRecord,
  record,
  type StoredProduct,
  storedProduct,
} from './records.ts';
import { keys, LIST_COUNT_SHARDS } from './table.ts';

export type ProductSortField = 'created_at' | 'name' | 'price_amount_type' | 'price_amount';
export type ProductFilter = 'is_archived' | 'is_recurring';

/**
 * The price a product sorts by: its first live fixed one (written first: the organization's default
 * currency; metered prices are written after the fixed price of their currency).
 */
const sortPrice = (product: StoredProduct) =>
  product.prices.find(
    (price): price is FixedPriceRecord => !price.is_archived && price.amount_type === 'fixed',
  );

/**
 * The shards of an organization's product list: a product's entries and count shards are in the
 * partitions `LIST#PRODUCT#<org>#S<k>[#<view>]`, k = `countShard(id)` (FNV-1a of the id, mod 16,
 * `listShard`), so an organization's creates spread over 16 partitions of each list and view
 * instead of one. In shard k only the count item `#COUNT#<k>` of each view is ever written.
 */
export const PRODUCT_LIST_SHARDS = LIST_COUNT_SHARDS;

/**
 * The owners a page of these organizations' products reads: per organization its old, unsharded
 * list partition (`LIST#PRODUCT#<org>`, the products listed before the shards until `npm run admin
 * -- product migrate-lists` has moved them; then only its counts, at 0) and its 16 shards.
 */
export const productListOwners = listShardOwners;

/**
 * The owners a page of these organizations' products reads: `productListOwners`, without the old
 * partitions of each organization marked `product_lists` (`LISTS_MIGRATED`: created with the
 * shards, or migrated; shared/data/list-markers.ts).
 */
export async function productListSources(
  table: Table,
  organizationIds: readonly string[],
): Promise<string[]> {
  return productListOwners(organizationIds, await markedOrganizations(table, 'products', organizationIds));
}

const productListingBase = {
  partition: 'productList',
  entity: 'product_entry',
  fields: {
    created_at: (product) => ({ time: product.created_at }),
    name: (product) => ({ text: product.name }),
    price_amount_type: (product) => ({ choice: sortPrice(product)?.amount_type ?? null }),
    price_amount: (product) => ({ integer: sortPrice(product)?.price_amount ?? null }),
  },
  views: {
    is_archived: (product) => String(product.is_archived),
    is_recurring: (product) => String(product.recurring_interval !== null),
  },
  // The 17 partitions' counts of a list or view are known by key: one BatchGetItem (`listPage`).
  countItems: shardedCountItems('productList'),
} satisfies Omit<Listing<StoredProduct, ProductSortField, ProductFilter>, 'owner'>;

/**
 * The product list: one entry per sort field, in the whole list and in a view per combination of
 * `is_archived` and `is_recurring` (4 lists, 16 entries and 4 counts per product), each product in
 * its organization's shard (`listShard`).
 */
export const productListing: Listing<StoredProduct, ProductSortField, ProductFilter> = {
  ...productListingBase,
  owner: (product) => listShard(product.organization_id, product.id),
};

/**
 * The list before the shards: every product of an organization in `LIST#PRODUCT#<org>` (and its
 * views). Read as one more source, and written only to take a product out of it (an update of a
 * product not yet moved relists it in its shard; the migration moves it).
 */
export const legacyProductListing: Listing<StoredProduct, ProductSortField, ProductFilter> = {
  ...productListingBase,
  owner: (product) => product.organization_id,
};

/**
 * The product item. `list_layout = 'sharded'`: its entries are in its shard (`productListing`);
 * absent on a product listed before the shards (`legacyProductListing`), or never listed (no
 * `version`). No GSI1 keys: nothing reads an organization's products from the index (products
 * written before carry `ORG#<org>` / `PRODUCT#<created>#<id>` until their next write).
 */
const productItem = (product: StoredProduct) => item(keys.product(product.id), 'product', product);

/** The list writes that take a product from where `before` is listed to its shard, as `after`. */
function changedListWrites(table: Table, before: ProductRecord, after: StoredProduct) {
  // A product written before products were listed has no entries yet: it enters the lists now.
  if (before.version === undefined) return listedWrites(table, productListing, after);
  const old = storedProduct(before);
  if (before.list_layout === 'sharded') return relistedWrites(table, productListing, old, after);
  return [...delistedWrites(table, legacyProductListing, old), ...listedWrites(table, productListing, after)];
}

/**
 * A new product, its list entries and `outbox` (its events, `shared/data/outbox.ts`), in one transaction. The SDK retries a transaction with the
 * same client request token, so a retry of one that was applied succeeds.
 */
export async function createProductRecord(
  table: Table,
  product: ProductRecord,
  outbox: readonly TransactItem[] = [],
): Promise<void> {
  const stored = storedProduct({ ...product, list_layout: 'sharded' });
  await transact(table, [
    { Put: createOnly(table, productItem(stored)) },
    ...listedWrites(table, productListing, stored),
    ...outbox,
  ]);
}

/** The product changed between the read and the write: nothing was written. */
export class ProductChanged extends Error {
  constructor() {
    super('product changed since it was read');
    this.name = 'ProductChanged';
  }
}

/**
 * Replaces a product with its new state and moves its list entries with it (and `outbox`, its
 * events), in one transaction,
 * conditioned on the product being exactly as read (its `version`): the entries to move are
 * computed from the state read, so a concurrent change must not slip in between. A product still
 * in the old list partition (`list_layout` absent) leaves it (entries deleted, each view's old
 * count down by one) and enters its shard, marked `list_layout = 'sharded'`.
 */
export const updateProductRecord = (
  table: Table,
  before: ProductRecord,
  after: ProductRecord,
  outbox: readonly TransactItem[] = [],
): Promise<void> =>
  putProductIfUnchanged(table, before, after, (stored) => [
    ...changedListWrites(table, before, stored),
    ...outbox,
  ]);

/**
 * Puts `after` as the product's next version, marked `list_layout = 'sharded'`, conditioned on the
 * item being at `before`'s version, with the list writes `writes` makes for the stored state, in one
 * transaction. `ProductChanged` when the condition fails: the product's own item is the one whose
 * condition can fail (the outbox's ids are fresh).
 */
async function putProductIfUnchanged(
  table: Table,
  before: ProductRecord,
  after: ProductRecord,
  writes: (stored: StoredProduct) => readonly TransactItem[],
): Promise<void> {
  const version = before.version ?? 0;
  const stored = storedProduct({ ...after, version: version + 1, list_layout: 'sharded' });
  try {
    await transact(table, [
      {
        Put: {
          TableName: table.name,
          Item: productItem(stored),
          ConditionExpression:
            version === 0 ? 'attribute_exists(PK) AND attribute_not_exists(version)' : 'version = :version',
          ...(version === 0 ? {} : { ExpressionAttributeValues: { ':version': version } }),
        },
      },
      ...writes(stored),
    ]);
  } catch (error) {
    if (error instanceof ConditionFailed && error.reasons[0] === 'ConditionalCheckFailed') {
      throw new ProductChanged();
    }
    throw error;
  }
}

/**
 * A product of the old list partition moved into its shard, as it is (`migrateProductLists`): the
 * item put again marked (its `version` raised, so an update that read it before fails its condition
 * and is decided again; its unread GSI1 keys dropped), conditioned on its version as read, its old
 * entries and counts taken out and its shard's written, in one transaction. `ProductChanged` when it
 * changed since it was read.
 */
export const moveProductToShard = (table: Table, product: ProductRecord): Promise<void> =>
  updateProductRecord(table, product, product);

/**
 * A marked product that a function of the release before updated during the roll-out, put right
 * (`migrateProductLists`). Such a function relists the product in the old partitions whatever its
 * layout (`relistedWrites` of the old listing from the state it read): the old partitions then hold
 * its entries as that function last wrote them (`stray`, a copy of the product), their counts moved
 * from the places of the state it first read (the shard's entries, `listed`) to those of `stray`,
 * and the shard's entries still show `listed`. One transaction, conditioned on the product's
 * version as read: the item put again (version raised), the stray entries deleted and the old
 * counts moved back, the shard's entries and counts moved from `listed` to the product as it is.
 * `ProductChanged` when it changed since it was read.
 */
export const relistStrayInShard = (
  table: Table,
  product: ProductRecord,
  stray: StoredProduct,
  listed: StoredProduct,
): Promise<void> =>
  putProductIfUnchanged(table, product, product, (stored) => [
    ...delistedWrites(table, legacyProductListing, stray).filter((write) => 'Delete' in write),
    ...countWrites(table, legacyProductListing, stray, listed),
    ...relistedWrites(table, productListing, listed, stored),
  ]);

/** A product and the organizations it may be checked against (default currency), in one batch. */
export async function getProductForUpdate(
  table: Table,
  productId: string,
  organizationIds: readonly string[],
): Promise<{ product?: ProductRecord; organizations: Map<string, OrganizationRecord> }> {
  const found = await readMany(table, [
    keys.product(productId),
    ...organizationIds.map((id) => keys.organization(id)),
  ]);
  const organizations = new Map<string, OrganizationRecord>();
  for (const id of organizationIds) {
    const stored = found.get(keyId(keys.organization(id)));
    if (stored) organizations.set(id, record<OrganizationRecord>(stored));
  }
  const product = found.get(keyId(keys.product(productId)));
  return { ...(product ? { product: productRecord(product) } : {}), organizations };
}

/**
 * The products among these ids that exist, by id: read by key (strongly consistent, at most 100 per
 * BatchGetItem) within `budget`, each reserved at a product at every input limit (its list entry's
 * `max`, the whole record) and charged at what was read (`ListReadTooCostly` when they do not fit).
 */
export async function readProductsWithin(
  table: Table,
  ids: readonly string[],
  budget: ReadBudget,
): Promise<Map<string, ProductRecord>> {
  const found = await readKeysWithinBudget(
    table,
    [...new Set(ids)].map((id) => keys.product(id)),
    ENTRY_BYTES.productList.max,
    budget,
  );
  const products = new Map<string, ProductRecord>();
  for (const stored of found.values()) {
    const product = productRecord(stored);
    products.set(product.id, product);
  }
  return products;
}

export type ProductQuery = RecordPageQuery<ProductSortField, ProductFilter>;

/** A page of products and the total matching, from the organizations' product lists. */
export const listProductPage = async (table: Table, query: ProductQuery): Promise<ListPage<ProductRecord>> =>
  listRecordPage(
    table,
    productListing,
    { ...query, organizationIds: await productListSources(table, query.organizationIds) },
    productRecord,
  );

/** IAM (shared/data/grants.ts). */
export const access = {
  /**
   * One transaction: the product, its list entries (whole list and views), the lists' counts, and
   * its `product.created` event.
   */
  createProductRecord: [
    { actions: ['dynamodb:PutItem'], leadingKeys: ['product', 'productList', 'event'] },
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['productList'] },
  ],
  /** One batch: the product and the caller's organizations (default currency). */
  getProductForUpdate: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['product', 'organization'] }],
  /** Products by key, within a read budget (the products of Customer State's subscriptions). */
  readProductsWithin: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['product'] }],
  /**
   * One transaction: the product (conditioned on its version), its entries moved in step, and its
   * `product.updated` event.
   */
  updateProductRecord: [
    { actions: ['dynamodb:PutItem'], leadingKeys: ['product', 'productList', 'event'] },
    { actions: ['dynamodb:DeleteItem', 'dynamodb:UpdateItem'], leadingKeys: ['productList'] },
  ],
  /**
   * After the organizations' list markers (shared/data/list-markers.ts `access`), the count items of
   * every organization's list partitions (its 16 shards, and the old one unless marked) of the list
   * or view the filters name, in one batch; then the entries of the non-empty ones (or a
   * query's key range of each), queries.
   */
  listProductPage: [{ actions: ['dynamodb:BatchGetItem', 'dynamodb:Query'], leadingKeys: ['productList'] }],
} as const satisfies DataAccess;
