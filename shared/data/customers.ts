/**
 * Customers. A customer is an item (`CUSTOMER#<id>`), its uniqueness guards in partitions of their
 * own, one per organization and value (e-mail, case-insensitively, and external id:
 * `CUSTOMEREMAIL#<org>#<value>`, `CUSTOMEREXTERNAL#<org>#<value>`; before that, in the
 * organization's partition: "Guards" below) and its entries in its shard of the
 * organization's customer list (`shared/data/listing.ts`: one per sort field and one for external-id
 * lookups, plus the shard's count; `customerListing`, 16 shards so that one tenant's creates spread
 * over 16 partitions). Every change writes all of them in one transaction, conditioned on the customer
 * being exactly as it was read (`modified_at` unchanged, not deleted), so the guards and entries can
 * never disagree with the item, and a change that lost a race is decided again on fresh data.
 */
import { ConditionFailed } from '../domain/errors.ts';
import { keyId, readMany } from './catalog.ts';
import {
  type GuardField,
  legacyGuardKey,
  organizationGuardsMigrated,
  ownGuardKey,
  readGuards,
} from './customer-guards.ts';
import { createOnly, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { markedOrganizations } from './list-markers.ts';
import {
  delistedWrites,
  type Listing,
  ListReadTooCostly,
  listedWrites,
  listPage,
  listShard,
  listShardOwners,
  pageOf,
  ReadBudget,
  readRange,
  recordsOf,
  relistedWrites,
  type SortCriterion,
  shardedCountItems,
  textKeyPrefix,
} from './listing.ts';
import { type CustomerRecord, customerRecord, item, storedCustomer } from './records.ts';
import { type Key, keys, LIST_COUNT_SHARDS } from './table.ts';

/**
 * A customer as the API sees it: the item without its internal wallet count. `list_layout` is
 * internal too (never presented): `'sharded'` on a customer whose list entries are in its shard of
 * the list (`customerListing`), absent on one created before the shards whose entries are still in
 * the organization's old list partition (`legacyCustomerListing`). So is `guard_layout`:
 * `'by_value'` on a customer whose guards are in their own partitions and whose item has no GSI1
 * keys, absent on one written before (its guards in `ORG#<org>`, GSI1 keys `ORG#<org>` /
 * `CUSTOMER#<created>#<id>` that nothing reads).
 */
export type CustomerState = Omit<CustomerRecord, 'wallet_count'> & {
  list_layout?: 'sharded';
  guard_layout?: 'by_value';
};

/** The fields a list of customers is sorted by. */
export type CustomerSortField = 'created_at' | 'email' | 'name';

/** What a list entry holds: the customer with its metadata as JSON text (as the item keeps it). */
type CustomerEntry = Omit<CustomerState, 'metadata'> & { metadata: string };

/**
 * The largest customer item, in bytes (50 metadata pairs, name and external id at their limits,
 * measured by `test/integration/list-bounds.test.ts`): the read bound's worst case per record.
 */
export const CUSTOMER_ITEM_BYTES = 110 * 1024;

/**
 * The shards of an organization's customer list: a customer's entries and its count shard are in
 * the partition `LIST#CUSTOMER#<org>#S<k>`, k = `countShard(id)` (FNV-1a of the id, mod 16), so an
 * organization's creates spread over 16 partitions (16 × DynamoDB's 1,000 WCU/s) instead of one. In
 * shard k only the count item `#COUNT#<k>` is ever written (the count shard is the same hash).
 */
export const CUSTOMER_LIST_SHARDS = LIST_COUNT_SHARDS;

/** The owner string of the customer's list shard: `<org>#S<k>` (`listShard`). */
export const customerListShard = listShard;

/**
 * The owners a page of these organizations' customers reads: per organization its 16 shards and
 * its old, unsharded list partition (`LIST#CUSTOMER#<org>`), which holds the customers created
 * before the shards until `npm run admin -- customer migrate-lists` has moved them (then it holds
 * only its count items, summing to 0, one more small Query per page).
 */
export const customerListOwners = listShardOwners;

/**
 * The owners a page of these organizations' customers reads: `customerListOwners`, without the old
 * partition of each organization marked `customer_lists` (`LISTS_MIGRATED`: created with the
 * shards, or migrated; shared/data/list-markers.ts).
 */
export async function customerListSources(
  table: Table,
  organizationIds: readonly string[],
): Promise<string[]> {
  return customerListOwners(organizationIds, await markedOrganizations(table, 'customers', organizationIds));
}

const customerListingBase = {
  partition: 'customerList',
  entity: 'customer_entry',
  fields: {
    created_at: (customer) => ({ time: customer.created_at }),
    email: (customer) => ({ text: customer.email }),
    name: (customer) => ({ text: customer.name }),
    // Not a sort order of the API: the key range that finds a customer by its external id.
    external_id: (customer) => ({ text: customer.external_id }),
  },
  // Slim entries (shared/data/listing.ts): the attributes the order, the owner and the filters of
  // `listCustomerPage` and `findCustomersByExternalId` read; `deleted_at` tells a live entry.
  slim: {
    attributes: ['organization_id', 'created_at', 'email', 'name', 'external_id'],
    recordKey: keys.customer,
    fromItem: (stored) => customerEntry(customerRecord(stored)),
    maxBytes: CUSTOMER_ITEM_BYTES,
  },
  // A shard `<org>#S<k>` holds one count item, `#COUNT#<k>`; the old partition `<org>` up to 16: a
  // page reads them all by key in one BatchGetItem (`listPage`), 17 partitions at once.
  countItems: shardedCountItems('customerList'),
} satisfies Omit<Listing<CustomerEntry, CustomerSortField | 'external_id'>, 'owner'>;

/** The customer list: each customer in its organization's shard (`customerListShard`). */
export const customerListing: Listing<CustomerEntry, CustomerSortField | 'external_id'> = {
  ...customerListingBase,
  owner: (customer) => customerListShard(customer.organization_id, customer.id),
};

/**
 * The list before the shards: every customer of an organization in `LIST#CUSTOMER#<org>`. Read as
 * one more source, and written only to take a customer out of it (a change of a customer not yet
 * moved relists it in its shard; a deletion delists it; the migration moves it).
 */
export const legacyCustomerListing: Listing<CustomerEntry, CustomerSortField | 'external_id'> = {
  ...customerListingBase,
  owner: (customer) => customer.organization_id,
};

/** What a customer's list entries hold (also the bench fixture's, built like the API's). */
export function customerEntry(customer: CustomerState): CustomerEntry {
  const { wallet_count: _internal, ...state } = customer as CustomerRecord;
  return { ...state, metadata: JSON.stringify(customer.metadata) };
}

export function stateOf(entry: CustomerEntry): CustomerState {
  return { ...entry, metadata: JSON.parse(entry.metadata) };
}

/** Which uniqueness guard refused a customer's e-mail address or external id: it is taken. */
export class CustomerTaken extends Error {
  constructor(readonly field: 'email' | 'external_id') {
    super(`customer ${field} taken`);
    this.name = 'CustomerTaken';
  }
}

/** The customer was changed or deleted since it was read: nothing was written; read it again. */
export class CustomerChanged extends Error {
  constructor() {
    super('customer changed since it was read');
    this.name = 'CustomerChanged';
  }
}

type TransactItem = Parameters<typeof transact>[1][number];

/**
 * A transaction's items, each with what its failed condition would mean: `customer`, the customer
 * changed; `email` / `external_id`, that guard is taken; `other`, nothing a client caused (a broken
 * table: a guard that is not the customer's own, a fresh id already used).
 */
type Role = 'customer' | 'email' | 'external_id' | 'other';
interface Labelled {
  role: Role;
  item: TransactItem;
}

/**
 * Guards. A guard is an item keyed by its value (`keys.customerEmail`, `keys.customerExternalId`),
 * naming its customer, created only if absent in the customer's own transactions: a value taken by
 * another customer cancels the transaction. Before they had partitions of their own, every guard of
 * an organization was in `ORG#<org>` (`legacyGuardKeys`), so every create of a tenant wrote that
 * one partition. A deployed table holds such guards until `npm run admin -- customer
 * migrate-guards` (shared/data/customer-guard-migration.ts) has moved them; meanwhile:
 *
 * - A customer knows where its own guards are: `guard_layout = 'by_value'` in their partitions,
 *   absent in `ORG#<org>`. Any write of an unmarked customer moves all of its guards (the old ones
 *   deleted, on condition that they are its own; the new ones created) and marks it, conditioned on
 *   it being still unmarked; so does the migration. A move is one-way and atomic.
 * - An organization knows whether any old guard may remain: its item's `customer_guards =
 *   'by_value'` (`CUSTOMER_GUARDS_MIGRATED`), set when it is created and, for older ones, by the
 *   migration once none remains. No code writes an old guard any more, so the marker, once set,
 *   stays true.
 * - Taking a value the customer did not hold reads that marker (one eventually consistent GetItem
 *   of `ORG#<org>`: a stale answer only says "not yet", which is safe). Not migrated: the transaction
 *   also condition-checks the value's old key absent, so no value an old guard holds is taken
 *   twice. Migrated: nothing in the transaction touches `ORG#<org>`.
 * - Lookups read the new keys (and the organizations' items) in one batch; a miss in an organization
 *   not yet migrated reads the old keys, and, on a miss there too, the new keys once more: a batch
 *   reads its keys one by one, so it may have read the new key just before a move and the old one
 *   just after; the move was then done before that batch returned, and the second read of the new
 *   key finds it (`readGuards`, shared/data/customer-guards.ts).
 */
/** Whether the customer's guards are in their own partitions (and its item has no GSI1 keys). */
const byValue = (customer: CustomerState): boolean => customer.guard_layout === 'by_value';

/** The key of a live customer's guard of `field`, where its guards are (`place`). */
const guardKey = (customer: CustomerState, field: GuardField, place: 'own' | 'legacy'): Key | undefined => {
  const value = customer[field];
  if (value === null || customer.deleted_at !== null) return undefined;
  return (place === 'own' ? ownGuardKey : legacyGuardKey)(customer.organization_id, field, value);
};

const sameKey = (a: Key | undefined, b: Key | undefined) => a?.PK === b?.PK && a?.SK === b?.SK;

/** A guard taken for this customer: refused when the value belongs to another. */
const takeGuard = (table: Table, customer: CustomerState, field: GuardField, key: Key): Labelled => ({
  role: field,
  item: { Put: createOnly(table, { ...key, entity: 'customer_guard', customer_id: customer.id }) },
});

/** A value's old key is free (an organization not yet migrated): refused when an old guard holds it. */
const legacyFree = (table: Table, field: GuardField, key: Key): Labelled => ({
  role: field,
  item: {
    ConditionCheck: { TableName: table.name, Key: key, ConditionExpression: 'attribute_not_exists(PK)' },
  },
});

/** A guard given up by this customer; it must be its own (anything else is a broken table). */
const releaseGuard = (table: Table, customer: CustomerState, key: Key): Labelled => ({
  role: 'other',
  item: {
    Delete: {
      TableName: table.name,
      Key: key,
      ConditionExpression: 'customer_id = :customer',
      ExpressionAttributeValues: { ':customer': customer.id },
    },
  },
});

/** The fields whose value `after` takes that `before` did not hold (each needs its guard taken anew). */
function newValues(before: CustomerState | undefined, after: CustomerState): GuardField[] {
  return (['email', 'external_id'] as const).filter((field) => {
    const to = guardKey(after, field, 'own');
    return to !== undefined && !(before && sameKey(guardKey(before, field, 'own'), to));
  });
}

/**
 * The guard writes of a change: each guard whose value changed released and the new one taken; a
 * customer whose guards are still in `ORG#<org>` moves all of them to their own partitions.
 * `legacyOrganization`: the organization may still hold old guards, so a value taken anew is also
 * checked free at its old key.
 */
function guardWrites(
  table: Table,
  before: CustomerState | undefined,
  after: CustomerState,
  legacyOrganization: boolean,
): Labelled[] {
  const writes: Labelled[] = [];
  const moving = before !== undefined && !byValue(before);
  const fresh = new Set(newValues(before, after));
  for (const field of ['email', 'external_id'] as const) {
    const from = before ? guardKey(before, field, moving ? 'legacy' : 'own') : undefined;
    const to = guardKey(after, field, 'own');
    if (!moving && sameKey(from, to)) continue;
    if (from && before) writes.push(releaseGuard(table, before, from));
    if (!to) continue;
    writes.push(takeGuard(table, after, field, to));
    const value = after[field] as string;
    if (legacyOrganization && fresh.has(field))
      writes.push(legacyFree(table, field, legacyGuardKey(after.organization_id, field, value)));
  }
  return writes;
}

/** Whether a write taking these values must check their old keys (its organization not yet migrated). */
async function legacyOrganizationFor(
  table: Table,
  before: CustomerState | undefined,
  after: CustomerState,
): Promise<boolean> {
  if (newValues(before, after).length === 0) return false;
  return !(await organizationGuardsMigrated(table, after.organization_id));
}

const entries = (writes: TransactItem[]): Labelled[] => writes.map((item) => ({ role: 'other', item }));

/** The fields a change may write (never the id, organization, creation time or wallet count). */
const CHANGEABLE = [
  'email',
  'email_verified',
  'name',
  'billing_name',
  'billing_address',
  'tax_id',
  'locale',
  'metadata',
  'external_id',
  'modified_at',
  'deleted_at',
] as const satisfies readonly (keyof CustomerState)[];

/**
 * The customer item's update: the changed fields, if it is still live and unchanged since it was read.
 * A customer read in the old list partition (`list_layout` absent) is also conditioned on still being
 * there (the migration may have moved it meanwhile: the change is then decided again), and when it
 * stays live is marked `list_layout = 'sharded'`, as the same transaction relists it in its shard.
 */
function customerUpdate(table: Table, before: CustomerState, after: CustomerState): Labelled {
  const changed = CHANGEABLE.filter(
    (field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]),
  );
  const stored = storedCustomer({ ...after, wallet_count: 0 });
  const legacy = before.list_layout !== 'sharded';
  const moves = legacy && after.deleted_at === null;
  // Guards still in `ORG#<org>` (guardWrites moves them): marked, and its unread GSI1 keys removed.
  const guardsMove = !byValue(before);
  const sets = [
    ...changed.map((field) => `#${field} = :${field}`),
    ...(moves ? ['list_layout = :sharded'] : []),
    ...(guardsMove ? ['guard_layout = :by_value'] : []),
  ];
  return {
    role: 'customer',
    item: {
      Update: {
        TableName: table.name,
        Key: keys.customer(before.id),
        UpdateExpression: `SET ${sets.join(', ')}${guardsMove ? ' REMOVE GSI1PK, GSI1SK' : ''}`,
        ConditionExpression: `attribute_exists(PK) AND deleted_at = :live AND modified_at = :read${
          legacy ? ' AND attribute_not_exists(list_layout)' : ''
        }${guardsMove ? ' AND attribute_not_exists(guard_layout)' : ''}`,
        ExpressionAttributeNames: Object.fromEntries(changed.map((field) => [`#${field}`, field])),
        ExpressionAttributeValues: {
          ...Object.fromEntries(changed.map((field) => [`:${field}`, stored[field]])),
          ':live': null,
          ':read': before.modified_at,
          ...(moves ? { ':sharded': 'sharded' } : {}),
          ...(guardsMove ? { ':by_value': 'by_value' } : {}),
        },
      },
    },
  };
}

/**
 * The list writes of a change: in the customer's shard, its entries rewritten (or delisted). A
 * customer still in the old list partition leaves it (entries deleted, the old count down by one)
 * and, when it stays live, enters its shard (entries, the shard's count up by one).
 */
function changedListWrites(table: Table, before: CustomerState, after: CustomerState): TransactItem[] {
  const live = after.deleted_at === null;
  if (before.list_layout === 'sharded') {
    return live
      ? relistedWrites(table, customerListing, customerEntry(before), customerEntry(after))
      : delistedWrites(table, customerListing, customerEntry(before));
  }
  return [
    ...delistedWrites(table, legacyCustomerListing, customerEntry(before)),
    ...(live ? listedWrites(table, customerListing, customerEntry(after)) : []),
  ];
}

/**
 * A customer of the old list partition moved into its shard, as it is (`migrateCustomerLists`): the
 * item marked, conditioned on being exactly as read, its old entries and count taken out, its shard's
 * entries and count added, in one transaction. `CustomerChanged` when it changed since it was read.
 */
export async function moveCustomerToShard(table: Table, customer: CustomerState): Promise<void> {
  await write(table, [
    {
      role: 'customer',
      item: {
        Update: {
          TableName: table.name,
          Key: keys.customer(customer.id),
          UpdateExpression: 'SET list_layout = :sharded',
          ConditionExpression:
            'attribute_exists(PK) AND deleted_at = :live AND modified_at = :read AND attribute_not_exists(list_layout)',
          ExpressionAttributeValues: { ':live': null, ':read': customer.modified_at, ':sharded': 'sharded' },
        },
      },
    },
    ...entries(changedListWrites(table, customer, customer)),
  ]);
}

/**
 * A customer whose guards are still in `ORG#<org>` moved as it is (`migrateCustomerGuards`): the
 * item marked `guard_layout = 'by_value'` and its GSI1 keys removed, conditioned on being exactly as
 * read and not yet marked, its old guards deleted (its own) and the new ones created, in one
 * transaction. A deleted customer has no guards: only its item changes. `CustomerChanged` when it
 * changed since it was read; `CustomerTaken` when another customer already holds a value's new
 * guard (a duplicate from before, left as it is for the operator).
 */
export async function moveCustomerGuards(table: Table, customer: CustomerState): Promise<void> {
  await write(table, [
    {
      role: 'customer',
      item: {
        Update: {
          TableName: table.name,
          Key: keys.customer(customer.id),
          UpdateExpression: 'SET guard_layout = :by_value REMOVE GSI1PK, GSI1SK',
          ConditionExpression:
            'attribute_exists(PK) AND modified_at = :read AND attribute_not_exists(guard_layout)',
          ExpressionAttributeValues: { ':read': customer.modified_at, ':by_value': 'by_value' },
        },
      },
    },
    ...guardWrites(table, customer, customer, false),
  ]);
}

/**
 * Runs a transaction and says what a cancellation means: the customer changed meanwhile (first, as a
 * fresh read may settle the rest), or a guard it takes belongs to another customer.
 */
async function write(table: Table, labelled: Labelled[]): Promise<void> {
  try {
    await transact(
      table,
      labelled.map((entry) => entry.item),
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const failed = labelled.filter((_, i) => error.reasons[i] === 'ConditionalCheckFailed');
    const roles = new Set(failed.map((entry) => entry.role));
    if (roles.has('customer')) throw new CustomerChanged();
    if (roles.has('email')) throw new CustomerTaken('email');
    if (roles.has('external_id')) throw new CustomerTaken('external_id');
    throw error;
  }
}

/**
 * A new customer: the item, its guards, its list entries and `outbox` (its events,
 * `shared/data/outbox.ts`), each created only if absent. A taken
 * guard is `CustomerTaken` naming the field. The SDK retries a transaction with the same client
 * request token, so a retry of one that was applied succeeds.
 */
export async function insertCustomer(
  table: Table,
  customer: CustomerRecord,
  outbox: readonly TransactItem[] = [],
): Promise<void> {
  const legacyOrganization = await legacyOrganizationFor(table, undefined, customer);
  await write(table, [
    {
      role: 'other',
      item: {
        Put: createOnly(
          table,
          item(
            keys.customer(customer.id),
            'customer',
            // Listed in its shard and its guards in their own partitions from the start; no GSI1
            // keys (nothing reads an organization's customers from the index).
            { ...storedCustomer(customer), list_layout: 'sharded', guard_layout: 'by_value' },
          ),
        ),
      },
    },
    ...guardWrites(table, undefined, customer, legacyOrganization),
    ...entries(listedWrites(table, customerListing, customerEntry(customer))),
    ...entries([...outbox]),
  ]);
}

/**
 * A change of a live customer (never of its organization), in one transaction: the item, the guards
 * whose value moved, and its list entries (rewritten, those whose key moved deleted). A soft delete
 * (`after` carries `deleted_at`) frees both guards and removes the entries and its count. `outbox`:
 * the change's events (`shared/data/outbox.ts`), in the same transaction.
 */
export async function writeCustomerChange(
  table: Table,
  before: CustomerState,
  after: CustomerState,
  outbox: readonly TransactItem[] = [],
): Promise<void> {
  const listed = changedListWrites(table, before, after);
  const legacyOrganization = await legacyOrganizationFor(table, before, after);
  await write(table, [
    customerUpdate(table, before, after),
    ...guardWrites(table, before, after, legacyOrganization),
    ...entries(listed),
    ...entries([...outbox]),
  ]);
}

/**
 * Every entry of these organizations' customer lists (their shards and old partitions) whose key
 * starts with `keyPrefix` (`textKeyPrefix`): one strongly consistent Query per list partition, in
 * parallel, unbounded (callers bound what they ask).
 */
export async function readCustomerEntries(
  table: Table,
  organizationIds: readonly string[],
  keyPrefix: string,
): Promise<CustomerEntry[]> {
  const found = await Promise.all(
    customerListOwners(organizationIds).map((owner) => readRange(table, customerListing, owner, keyPrefix)),
  );
  return found.flat();
}

/**
 * The live customers of these organizations that hold `value` in `field` (`readGuards`), then one
 * strongly consistent BatchGetItem of the customers they name (a guard is written and removed in its
 * customer's own transactions, so it names a live customer or none).
 */
async function customersByGuard(
  table: Table,
  organizationIds: readonly string[],
  field: GuardField,
  value: string,
): Promise<CustomerState[]> {
  const { holders } = await readGuards(
    table,
    organizationIds.map((organizationId) => ({ organizationId, field, value })),
  );
  const ids = [...new Set(holders.filter((id) => id !== undefined))];
  if (ids.length === 0) return [];
  const customers = await readMany(table, ids.map(keys.customer));
  const wanted = new Set(organizationIds);
  return ids.flatMap((id) => {
    const stored = customers.get(keyId(keys.customer(id)));
    if (!stored) return [];
    const customer = stateOf(customerEntry(customerRecord(stored)));
    return customer.deleted_at === null && wanted.has(customer.organization_id) ? [customer] : [];
  });
}

/**
 * Live customers of these organizations whose external id is exactly `externalId` (case included):
 * their external-id guards, then the customers (`customersByGuard`: 2 round trips, whatever the
 * number of organizations). Not the list's key ranges: those are 17 partitions per organization.
 */
export async function findCustomersByExternalId(
  table: Table,
  organizationIds: readonly string[],
  externalId: string,
): Promise<CustomerState[]> {
  const found = await customersByGuard(table, organizationIds, 'external_id', externalId);
  return found.filter((customer) => customer.external_id === externalId);
}

export interface CustomerFilters {
  /** Exact e-mail address, case-insensitively. */
  email?: string;
  /** A prefix of the name or e-mail address (case-insensitively), or the exact external id. */
  query?: string;
}

const startsWith = (value: string | null, prefix: string) =>
  value?.toLowerCase().startsWith(prefix.toLowerCase()) === true;

/**
 * One page of the live customers of these organizations. Unfiltered: `listPage` (the count and the
 * page's own entries). Filtered: the key ranges of the matches only (the e-mail address's; or the
 * query's name prefix, e-mail prefix and external id), ordered and cut in memory.
 */
export async function listCustomerPage(
  table: Table,
  organizationIds: readonly string[],
  filters: CustomerFilters,
  criteria: readonly SortCriterion<CustomerSortField>[],
  offset: number,
  limit: number,
): Promise<{ items: CustomerState[]; total: number }> {
  const { email, query } = filters;
  const matchesQuery = (entry: { name: string | null; email: string | null; external_id: string | null }) =>
    query === undefined ||
    startsWith(entry.name, query) ||
    startsWith(entry.email, query) ||
    entry.external_id === query;
  if (email !== undefined) {
    // An exact address: its guard in each organization (at most one customer each), then the customers.
    const found = await customersByGuard(table, organizationIds, 'email', email);
    const matches = found
      .filter((customer) => customer.email?.toLowerCase() === email.toLowerCase() && matchesQuery(customer))
      .map(customerEntry);
    const page = pageOf(customerListing, matches, criteria, offset, limit);
    return { items: page.items.map(stateOf), total: page.total };
  }
  const owners = await customerListSources(table, organizationIds);
  if (query === undefined) {
    const page = await listPage(table, customerListing, owners, criteria, offset, limit);
    return { items: page.items.map(stateOf), total: page.total };
  }
  const ranges = [
    textKeyPrefix('name', query, 'startsWith'),
    textKeyPrefix('email', query, 'startsWith'),
    textKeyPrefix('external_id', query, 'equals'),
  ];
  // One read budget for every range (shared/data/listing.ts): the matches are read in full.
  const budget = new ReadBudget();
  const read = await Promise.all(
    owners.flatMap((owner) =>
      ranges.map((prefix) => readRange(table, customerListing, owner, prefix, { budget })),
    ),
  ).catch((error: unknown) => {
    if (error instanceof ListReadTooCostly) {
      throw new ListReadTooCostly('matches', error.entries, 'query');
    }
    throw error;
  });
  const matches = read.flat().filter(matchesQuery);
  const page = pageOf(customerListing, matches, criteria, offset, limit);
  const records = await recordsOf(table, customerListing, page.items, budget).catch((error: unknown) => {
    if (error instanceof ListReadTooCostly) throw new ListReadTooCostly('size', error.entries);
    throw error;
  });
  return { items: records.map(stateOf), total: page.total };
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /**
   * The organization's marker read (`organizationGuardsMigrated`), then one transaction: the
   * customer, its e-mail and external-id guards (each in its own partition), each created only if
   * absent (in an organization not yet migrated, their old keys in `ORG#<org>` checked absent), its
   * list entries and the list's count, and its event (the outbox).
   */
  insertCustomer: [
    { actions: ['dynamodb:GetItem', 'dynamodb:ConditionCheckItem'], leadingKeys: ['organization'] },
    {
      actions: ['dynamodb:PutItem'],
      leadingKeys: ['customer', 'customerEmail', 'customerExternalId', 'customerList', 'event'],
    },
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['customerList'] },
  ],
  /**
   * A customer changed in one transaction: the item (conditioned on being as read), the e-mail and
   * external-id guards that move (released and taken in their partitions; a customer whose guards
   * are still in `ORG#<org>` releases them there; a value taken anew in an organization not yet
   * migrated checked free at its old key, after the marker's read), the list entries rewritten,
   * those whose sort key moved deleted, and its `customer.updated` event.
   */
  writeCustomerChange: [
    // The list's counts: a customer still in the old list partition moves to its shard (-1 there, +1 here).
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['customer', 'customerList'] },
    { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], leadingKeys: ['customerEmail', 'customerList'] },
    {
      actions: ['dynamodb:GetItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
      leadingKeys: ['organization'],
    },
    // A first external id's guard, and its event (shared/data/outbox.ts `access.outboxWrites`); an
    // external id never changes once set, so its guard is only released by a deletion.
    { actions: ['dynamodb:PutItem'], leadingKeys: ['customerExternalId', 'event'] },
  ],
  /**
   * `writeCustomerChange` of a soft deletion: the item, both guards (in their partitions, or in
   * `ORG#<org>` for a customer not yet moved), its list entries, the list's count, and its
   * `customer.deleted` event.
   */
  writeCustomerDeletion: [
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['customer', 'customerList'] },
    {
      actions: ['dynamodb:DeleteItem'],
      leadingKeys: ['customerEmail', 'customerExternalId', 'organization', 'customerList'],
    },
    // Its event (shared/data/outbox.ts `access.outboxWrites`).
    { actions: ['dynamodb:PutItem'], leadingKeys: ['event'] },
  ],
  /**
   * The external id's guard of each of the caller's organizations and those organizations' items
   * (`readGuards`; the old keys in `ORG#<org>` where not yet migrated), then the customers they name.
   */
  findCustomersByExternalId: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customerExternalId', 'organization', 'customer'] },
  ],
  /**
   * The organizations' list markers (`markedOrganizations`: their items, in the batch grant below),
   * then the count's shards and the page's entries (or a query's key ranges) of each organization's list partitions (16 shards, and the old
   * one unless marked), then the page's customers; an `email` filter reads the address's guard of
   * each organization instead (`readGuards`), then the customers.
   */
  listCustomerPage: [
    { actions: ['dynamodb:Query'], leadingKeys: ['customerList'] },
    {
      actions: ['dynamodb:BatchGetItem'],
      leadingKeys: ['customer', 'organization', 'customerList', 'customerEmail'],
    },
  ],
} as const satisfies DataAccess;
