/**
 * Where a customer's uniqueness guards are, and the lookups that read them (the design: "Guards" in
 * shared/data/customers.ts, which writes them). Apart from that module so that the functions that
 * only look customers up by external id (the meter aggregator, Create Customer Session) import no
 * customer writes.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keyId, readMany } from './catalog.ts';
import { run, type Table } from './dynamo.ts';
import { CUSTOMER_GUARDS_MIGRATED, type Key, keys, legacyGuardKeys } from './table.ts';

export type GuardField = 'email' | 'external_id';

export const ownGuardKey = (organizationId: string, field: GuardField, value: string): Key =>
  field === 'email'
    ? keys.customerEmail(organizationId, value)
    : keys.customerExternalId(organizationId, value);

export const legacyGuardKey = (organizationId: string, field: GuardField, value: string): Key =>
  field === 'email'
    ? legacyGuardKeys.customerEmail(organizationId, value)
    : legacyGuardKeys.customerExternalId(organizationId, value);

/** An organization's item says its guards are all in their own partitions. */
export const guardsMigrated = (organization: Record<string, unknown> | undefined): boolean =>
  organization?.[CUSTOMER_GUARDS_MIGRATED.attribute] === CUSTOMER_GUARDS_MIGRATED.value;

/**
 * Whether the organization's guards are migrated: one eventually consistent GetItem of its item (a
 * stale answer can only be "not yet": the marker is never removed).
 */
export async function organizationGuardsMigrated(table: Table, organizationId: string): Promise<boolean> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({
        TableName: table.name,
        Key: keys.organization(organizationId),
        ProjectionExpression: CUSTOMER_GUARDS_MIGRATED.attribute,
      }),
    ),
  );
  return guardsMigrated(result.Item);
}

/** A guard lookup: the customer that holds `value` in `field` in the organization, if any. */
export interface GuardLookup {
  organizationId: string;
  field: GuardField;
  value: string;
}

/**
 * The customer id each lookup's guard names (undefined: none), and the items of `also` (read in the
 * first batch). One strongly consistent BatchGetItem of the new keys, the lookups' organizations and
 * `also`; for misses in organizations not yet migrated, one of the old keys and, on a miss there
 * too, one of the new keys again (see "Guards" above: a guard that moved while the first batch ran
 * is found there).
 */
export async function readGuards(
  table: Table,
  lookups: readonly GuardLookup[],
  also: readonly Key[] = [],
): Promise<{ holders: (string | undefined)[]; found: Map<string, Record<string, unknown>> }> {
  const own = lookups.map((l) => ownGuardKey(l.organizationId, l.field, l.value));
  const organizations = lookups.map((l) => keys.organization(l.organizationId));
  const wanted = new Map([...own, ...organizations, ...also].map((key) => [keyId(key), key]));
  const found = await readMany(table, [...wanted.values()]);
  const holderOf = (stored: Record<string, unknown> | undefined) =>
    stored?.customer_id === undefined ? undefined : String(stored.customer_id);
  const holders = own.map((key) => holderOf(found.get(keyId(key))));
  const pending = lookups.flatMap((lookup, i) =>
    holders[i] === undefined && !guardsMigrated(found.get(keyId(keys.organization(lookup.organizationId))))
      ? [i]
      : [],
  );
  if (pending.length > 0) {
    const old = pending.map((i) => {
      const lookup = lookups[i] as GuardLookup;
      return legacyGuardKey(lookup.organizationId, lookup.field, lookup.value);
    });
    const oldFound = await readMany(table, [...new Map(old.map((key) => [keyId(key), key])).values()]);
    pending.forEach((i, j) => {
      holders[i] = holderOf(oldFound.get(keyId(old[j] as Key)));
    });
    const again = pending.filter((i) => holders[i] === undefined);
    if (again.length > 0) {
      const reread = again.map((i) => own[i] as Key);
      const second = await readMany(table, [...new Map(reread.map((key) => [keyId(key), key])).values()]);
      for (const i of again) holders[i] = holderOf(second.get(keyId(own[i] as Key)));
    }
  }
  return { holders, found };
}
