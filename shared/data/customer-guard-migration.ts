/**
 * Moving a deployed stack's customer guards out of their organizations' partitions
 * (shared/data/customers.ts, "Guards"): customers written before carry no `guard_layout`, their
 * e-mail and external-id guards are in `ORG#<org>` and their items carry GSI1 keys that nothing
 * reads. `npm run admin -- customer migrate-guards`:
 *
 * 1. One Scan finds the unmarked customer items and the organizations without the marker (an
 *    operator's one-off).
 * 2. Each unmarked customer is moved on its own: read (strongly consistent), then one transaction
 *    that marks it and removes its GSI1 keys on condition that it is exactly as read and not yet
 *    marked, deletes its old guards (its own) and creates the new ones (`moveCustomerGuards`). A
 *    customer changed meanwhile is read and moved again (`busy` after 5 tries); one moved meanwhile
 *    (a change of it moves it too, or another run) is skipped. A new guard another customer already
 *    holds (a duplicate two customers were given before, e.g. by old and new code side by side
 *    during the deployment) is reported under `conflicts` and nothing of that customer is moved.
 * 3. Each unmarked organization is then queried for old guards left (`begins_with(SK,
 *    'CUSTOMERE')`); those of unmarked customers (written after the Scan) are moved as in 2. An
 *    organization with none left is marked (`CUSTOMER_GUARDS_MIGRATED`); one with some left is not,
 *    and its guards stay read and checked where they are.
 *
 * So a run can be interrupted anywhere and run again: each customer moves once, uniqueness holds
 * across both places meanwhile (writes check a value's old key until the organization is marked,
 * lookups read it), and a run after a complete one changes nothing.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getCustomer } from './catalog.ts';
import { CustomerChanged, type CustomerState, CustomerTaken, moveCustomerGuards } from './customers.ts';
import { run, scanAll, type Table } from './dynamo.ts';
import { CUSTOMER_GUARDS_MIGRATED, keys, partitions } from './table.ts';

/** Attempts at moving one customer that keeps changing while it is moved. */
const ATTEMPTS = 5;

export interface CustomerGuardMigration {
  /** Customers moved by this run (live ones with their guards, deleted ones only their item). */
  migrated: number;
  /** Customers found moved already (by a change of theirs or another run). */
  skipped: number;
  /** Customers that kept changing while moved: still unmarked, run again. */
  busy: string[];
  /** Customers not moved because another customer holds one of their values' new guard. */
  conflicts: { customer_id: string; field: 'email' | 'external_id' }[];
  /** Organizations marked by this run: none of their guards left in `ORG#<org>`. */
  organizations: number;
  /** Organizations left unmarked: old guards remain (busy or conflicting customers). */
  unmarked: string[];
}

export interface CustomerGuardMigrationOptions {
  /** Stop after moving this many customers, before marking any organization (an interrupted run). */
  stopAfter?: number;
}

export async function migrateCustomerGuards(
  table: Table,
  options: CustomerGuardMigrationOptions = {},
): Promise<CustomerGuardMigration> {
  const customers: string[] = [];
  const organizations: string[] = [];
  const unmarked = await scanAll(table, {
    FilterExpression:
      'PK = SK AND ((begins_with(PK, :customer) AND attribute_not_exists(guard_layout)) OR (begins_with(PK, :org) AND attribute_not_exists(#marker)))',
    ExpressionAttributeNames: { '#marker': CUSTOMER_GUARDS_MIGRATED.attribute },
    ExpressionAttributeValues: { ':customer': partitions.customer, ':org': partitions.organization },
    ProjectionExpression: 'PK, id',
    ConsistentRead: true,
  });
  for (const stored of unmarked) {
    (String(stored.PK).startsWith(partitions.customer) ? customers : organizations).push(String(stored.id));
  }

  const report: CustomerGuardMigration = {
    migrated: 0,
    skipped: 0,
    busy: [],
    conflicts: [],
    organizations: 0,
    unmarked: [],
  };
  const stopped = () => options.stopAfter !== undefined && report.migrated >= options.stopAfter;
  for (const id of customers) {
    if (stopped()) return report;
    await moveOne(table, id, report);
  }

  for (const organizationId of organizations) {
    if (stopped()) return report;
    // Guards left in the organization's partition: of customers written after the Scan, or not moved.
    const left = await oldGuards(table, organizationId);
    const owners = [...new Set(left.map((guard) => String(guard.customer_id)))];
    const settled = new Set([...report.busy, ...report.conflicts.map((c) => c.customer_id)]);
    for (const id of owners) if (!settled.has(id)) await moveOne(table, id, report);
    if ((await oldGuards(table, organizationId)).length > 0) {
      report.unmarked.push(organizationId);
      continue;
    }
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.organization(organizationId),
          UpdateExpression: 'SET #marker = :migrated',
          ConditionExpression: 'attribute_exists(PK)',
          ExpressionAttributeNames: { '#marker': CUSTOMER_GUARDS_MIGRATED.attribute },
          ExpressionAttributeValues: { ':migrated': CUSTOMER_GUARDS_MIGRATED.value },
        }),
      ),
    );
    report.organizations++;
  }
  return report;
}

/** One customer moved (`moveCustomerGuards`), read again after a lost race; counted in `report`. */
async function moveOne(table: Table, id: string, report: CustomerGuardMigration): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const customer: CustomerState | undefined = await getCustomer(table, id, true);
    if (!customer || customer.guard_layout === 'by_value') {
      report.skipped++;
      return;
    }
    try {
      await moveCustomerGuards(table, customer);
      report.migrated++;
      return;
    } catch (error) {
      if (error instanceof CustomerTaken) {
        report.conflicts.push({ customer_id: id, field: error.field });
        return;
      }
      if (!(error instanceof CustomerChanged)) throw error;
      if (attempt >= ATTEMPTS) {
        report.busy.push(id);
        return;
      }
    }
  }
}

/** The customer guards still in an organization's partition (`legacyGuardKeys`): both kinds. */
async function oldGuards(table: Table, organizationId: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let next: Record<string, unknown> | undefined;
  do {
    const page = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :guards)',
          // `CUSTOMEREMAIL…` and `CUSTOMEREXTERNAL…`, `#` or `%` (hashed) after the kind.
          ExpressionAttributeValues: { ':pk': keys.organization(organizationId).PK, ':guards': 'CUSTOMERE' },
          ConsistentRead: true,
          ...(next ? { ExclusiveStartKey: next } : {}),
        }),
      ),
    );
    items.push(...(page.Items ?? []));
    next = page.LastEvaluatedKey;
  } while (next);
  return items;
}
