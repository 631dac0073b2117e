/**
 * Moving a deployed stack's customer lists into their shards (`shared/data/customers.ts`
 * `customerListing`): the customers created before the shards are listed in their organization's
 * old partition `LIST#CUSTOMER#<org>` (entries and 16 count shards), and carry no `list_layout`.
 * Their `created_at` entries are found with one Scan (an operator's one-off; one entry per customer),
 * then each customer is moved on its own: read (strongly consistent), then one transaction that
 * marks it `list_layout = 'sharded'` on condition that it is exactly as read and not yet marked,
 * deletes its old entries, takes one from the old count, and writes its shard's entries and count
 * (`moveCustomerToShard`). A customer changed meanwhile is read and moved again; one moved meanwhile
 * (by a change of it, or another run) is skipped. So a run can be interrupted anywhere and run again:
 * nothing is moved twice, no customer is missing from a list at any moment, and the counts stay
 * exact (readers read the old partition as one more source until it is empty).
 *
 * The same Scan finds the organizations without the marker `customer_lists` (`LISTS_MIGRATED`);
 * after the moves each is read again (its old partition, strongly consistent) and marked if it
 * holds nothing: no entry, its counts at 0 (`oldListsHoldNothing`). From then on its pages read its
 * shards only (shared/data/list-markers.ts). One with something left (a busy customer, one listed
 * there meanwhile) stays unmarked and read as before. An interrupted run marks none. A marked
 * organization's old partition is still scanned by every run, so a customer an old-release function
 * listed there during a roll-out is moved by the run that follows the deployment.
 * `npm run admin -- customer migrate-lists`.
 */
import { getCustomer } from './catalog.ts';
import { CustomerChanged, type CustomerState, moveCustomerToShard } from './customers.ts';
import { scanAll, type Table } from './dynamo.ts';
import { markListsMigrated, oldListsHoldNothing } from './list-markers.ts';
import { LISTS_MIGRATED, listKeys, partitions } from './table.ts';

/** A shard's partition key ends `#S<k>`; the old partition's is `LIST#CUSTOMER#<org>`. */
const SHARD_PARTITION = /#S\d+$/;
/** Attempts at moving one customer that keeps changing while it is moved. */
const ATTEMPTS = 5;

export interface CustomerListMigration {
  /** Customers moved into their shard by this run. */
  migrated: number;
  /** Customers found moved already (by a change of theirs or another run) or deleted meanwhile. */
  skipped: number;
  /** Customers that kept changing while moved: still in the old partition, run again. */
  busy: string[];
  /** Organizations marked by this run: their old partition holds nothing. */
  organizations: number;
  /** Organizations left unmarked: something is left in their old partition (run again). */
  unmarked: string[];
}

export interface CustomerListMigrationOptions {
  /** Stop after moving this many (a rehearsal of an interrupted run). */
  stopAfter?: number;
}

export async function migrateCustomerLists(
  table: Table,
  options: CustomerListMigrationOptions = {},
): Promise<CustomerListMigration> {
  const found = await scanAll(table, {
    FilterExpression:
      '(begins_with(PK, :list) AND begins_with(SK, :created)) OR (PK = SK AND begins_with(PK, :org) AND attribute_not_exists(#marker))',
    ExpressionAttributeNames: { '#marker': LISTS_MIGRATED.customers.attribute },
    ExpressionAttributeValues: {
      ':list': partitions.customerList,
      ':created': 'created_at#',
      ':org': partitions.organization,
    },
    ProjectionExpression: 'PK, id',
    ConsistentRead: true,
  });
  const isOrganization = (stored: Record<string, unknown>) =>
    String(stored.PK).startsWith(partitions.organization);
  const organizations = found.filter(isOrganization).map((stored) => String(stored.id));
  const ids = found
    .filter((stored) => !isOrganization(stored) && !SHARD_PARTITION.test(String(stored.PK)))
    .map((stored) => String(stored.id));

  const report: CustomerListMigration = { migrated: 0, skipped: 0, busy: [], organizations: 0, unmarked: [] };
  const stopped = () => options.stopAfter !== undefined && report.migrated >= options.stopAfter;
  for (const id of ids) {
    if (stopped()) return report;
    for (let attempt = 1; ; attempt++) {
      const customer: CustomerState | undefined = await getCustomer(table, id, true);
      if (!customer || customer.deleted_at !== null || customer.list_layout === 'sharded') {
        report.skipped++;
        break;
      }
      try {
        await moveCustomerToShard(table, customer);
        report.migrated++;
        break;
      } catch (error) {
        if (!(error instanceof CustomerChanged)) throw error;
        if (attempt >= ATTEMPTS) {
          report.busy.push(id);
          break;
        }
      }
    }
  }
  for (const organizationId of organizations) {
    if (await oldListsHoldNothing(table, [listKeys.partition('customerList', organizationId)])) {
      await markListsMigrated(table, 'customers', organizationId);
      report.organizations++;
    } else {
      report.unmarked.push(organizationId);
    }
  }
  return report;
}
