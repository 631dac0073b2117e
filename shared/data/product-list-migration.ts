/**
 * Moving a deployed stack's product lists into their shards (`shared/data/products.ts`
 * `productListing`): the products listed before the shards are in their organization's old
 * partitions `LIST#PRODUCT#<org>` and its views (entries and 16 count shards each), and carry no
 * `list_layout`. Their `created_at` entries of the whole list are found with one Scan (an
 * operator's one-off; one entry per product), then each product is moved on its own: read
 * (strongly consistent), then one transaction that puts it again marked `list_layout = 'sharded'`
 * (its `version` raised) on condition that its version is the one read, deletes its old entries,
 * takes one from each old count, and writes its shard's entries and counts (`moveProductToShard`).
 * A product changed meanwhile is read and moved again; one moved meanwhile (by an update of it, or
 * another run) is skipped. So a run can be interrupted anywhere and run again: nothing is moved
 * twice, no product is missing from a list at any moment, and the counts stay exact (readers read
 * the old partitions as one more source until they are empty). The same run puts right the marked
 * products that a function of the release before updated during the roll-out (it relists them in the
 * old partitions: `relistStrayInShard`), found by the same Scan.
 *
 * The same Scan finds the organizations without the marker `product_lists` (`LISTS_MIGRATED`);
 * after the moves each one's old partitions (the whole list and its 8 views) are read again,
 * strongly consistent, and it is marked if they hold nothing: no entry, every count at 0
 * (`oldListsHoldNothing`). From then on its pages read its shards only
 * (shared/data/list-markers.ts). One with something left stays unmarked and read as before; an
 * interrupted run marks none. A marked organization's old partitions are still scanned by every run,
 * so a product an old-release function relisted there during a roll-out is put right by the run
 * that follows the deployment.
 * `npm run admin -- product migrate-lists`.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { run, scanAll, type Table } from './dynamo.ts';
import { markListsMigrated, oldListsHoldNothing } from './list-markers.ts';
import { listedKeys } from './listing.ts';
import {
  getProductForUpdate,
  moveProductToShard,
  ProductChanged,
  productListing,
  relistStrayInShard,
} from './products.ts';
import { type ProductRecord, record, type StoredProduct, storedProduct } from './records.ts';
import { LISTS_MIGRATED, type ListView, listKeys, partitions } from './table.ts';

/** The whole list of an old partition: `LIST#PRODUCT#<org>`, neither a shard `#S<k>` nor a view `#<name>=…`. */
const OLD_WHOLE_LIST = new RegExp(`^${partitions.productList}[^#]+$`);
/** Attempts at moving one product that keeps changing while it is moved. */
const ATTEMPTS = 5;

export interface ProductListMigration {
  /** Products moved into their shard by this run. */
  migrated: number;
  /** Products found moved already (by an update of theirs or another run) or gone meanwhile. */
  skipped: number;
  /**
   * Marked products whose entries a function of the release before relisted in the old partitions
   * during the roll-out, put right (`relistStrayInShard`).
   */
  repaired: number;
  /** Products that kept changing while moved: still in the old partition, run again. */
  busy: string[];
  /** Organizations marked by this run: their old partitions hold nothing. */
  organizations: number;
  /** Organizations left unmarked: something is left in their old partitions (run again). */
  unmarked: string[];
}

/** Every view of a product list (`productListing.views`): none, each filter alone, both. */
const BOOLEANS = ['true', 'false'];
const PRODUCT_VIEWS: readonly ListView[] = [
  [],
  ...BOOLEANS.map((a) => [['is_archived', a] as const]),
  ...BOOLEANS.map((r) => [['is_recurring', r] as const]),
  ...BOOLEANS.flatMap((a) =>
    BOOLEANS.map((r) => [['is_archived', a] as const, ['is_recurring', r] as const]),
  ),
];

export interface ProductListMigrationOptions {
  /** Stop after moving this many (a rehearsal of an interrupted run). */
  stopAfter?: number;
}

export async function migrateProductLists(
  table: Table,
  options: ProductListMigrationOptions = {},
): Promise<ProductListMigration> {
  const found = await scanAll(table, {
    FilterExpression:
      '(begins_with(PK, :list) AND begins_with(SK, :created)) OR (PK = SK AND begins_with(PK, :org) AND attribute_not_exists(#marker))',
    ExpressionAttributeNames: { '#marker': LISTS_MIGRATED.products.attribute },
    ExpressionAttributeValues: {
      ':list': partitions.productList,
      ':created': 'created_at#',
      ':org': partitions.organization,
    },
    ConsistentRead: true,
  });
  const isOrganization = (stored: Record<string, unknown>) =>
    String(stored.PK).startsWith(partitions.organization);
  const organizations = found.filter(isOrganization).map((stored) => String(stored.id));
  const entries = found.filter((stored) => !isOrganization(stored));
  // The old whole list's created_at entries: a copy of each product as it was last listed there.
  const old = new Map(
    entries
      .filter((stored) => OLD_WHOLE_LIST.test(String(stored.PK)))
      .map((stored) => [String(stored.id), record<StoredProduct>(stored)] as const),
  );

  const report: ProductListMigration = {
    migrated: 0,
    skipped: 0,
    repaired: 0,
    busy: [],
    organizations: 0,
    unmarked: [],
  };
  for (const [id, stray] of old) {
    if (options.stopAfter !== undefined && report.migrated >= options.stopAfter) return report;
    for (let attempt = 1; ; attempt++) {
      const { product } = await getProductForUpdate(table, id, []);
      // No version: never listed (an update lists it).
      if (!product || product.version === undefined) {
        report.skipped++;
        break;
      }
      try {
        if (product.list_layout !== 'sharded') {
          await moveProductToShard(table, product);
          report.migrated++;
          break;
        }
        // Marked, and still in the old list: relisted there by a function of the release before.
        const listed = await shardListing(table, product);
        if (!listed) {
          report.skipped++;
          break;
        }
        await relistStrayInShard(table, product, stray, listed);
        report.repaired++;
        break;
      } catch (error) {
        if (!(error instanceof ProductChanged)) throw error;
        if (attempt >= ATTEMPTS) {
          report.busy.push(id);
          break;
        }
      }
    }
  }
  for (const organizationId of organizations) {
    const partitionKeys = PRODUCT_VIEWS.map((view) =>
      listKeys.partition('productList', organizationId, view),
    );
    if (await oldListsHoldNothing(table, partitionKeys)) {
      await markListsMigrated(table, 'products', organizationId);
      report.organizations++;
    } else {
      report.unmarked.push(organizationId);
    }
  }
  return report;
}

/**
 * The product as its shard lists it: its `created_at` entry of the whole list (the key does not move:
 * neither the creation time nor the id changes), read strongly consistent.
 */
async function shardListing(table: Table, product: ProductRecord): Promise<StoredProduct | undefined> {
  const [key] = listedKeys(productListing, storedProduct(product)).filter(
    (k) => k.SK.startsWith('created_at#') && !k.PK.includes('='),
  );
  if (!key) return undefined;
  const found = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: { PK: key.PK, SK: key.SK }, ConsistentRead: true }),
    ),
  );
  return found.Item ? record<StoredProduct>(found.Item) : undefined;
}
