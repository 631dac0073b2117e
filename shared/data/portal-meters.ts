/**
 * Reads of the customer portal's meters (`shared/services/portal-meters.ts`): the session's customer
 * and the customer meters it may see, by key. A customer meter's id is derived from (customer,
 * meter) (`customerMeterId`), so the customer's customer meters are named by key, one per meter of
 * its organization: no list of them per customer is kept or needed. Everything else they read is
 * `shared/data/customer-meters.ts`'s (the organization's meters, a customer meter's usage) and
 * `shared/data/meters.ts`'s (one meter).
 */
import { keyId, readMany } from './catalog.ts';
import { type CustomerMeterRecord, customerMeterRecord } from './customer-meters.ts';
import type { Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { type CustomerRecord, customerRecord } from './records.ts';
import { keys } from './table.ts';

/**
 * A customer and those of these customer meters that exist, in one batch read (one BatchGetItem per
 * 100 keys, strongly consistent): the customer undefined when it does not exist.
 */
export async function readCustomerWithCustomerMeters(
  table: Table,
  customerId: string,
  customerMeterIds: readonly string[],
): Promise<{ customer?: CustomerRecord; customerMeters: Map<string, CustomerMeterRecord> }> {
  const customerKey = keys.customer(customerId);
  const found = await readMany(table, [
    customerKey,
    ...[...new Set(customerMeterIds)].map((id) => keys.customerMeter(id)),
  ]);
  const stored = found.get(keyId(customerKey));
  found.delete(keyId(customerKey));
  const customerMeters = new Map<string, CustomerMeterRecord>();
  for (const item of found.values()) {
    const record = customerMeterRecord(item);
    customerMeters.set(record.id, record);
  }
  return { ...(stored ? { customer: customerRecord(stored) } : {}), customerMeters };
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /** The session's customer and its customer meters, by key, in one batch. */
  readCustomerWithCustomerMeters: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'customerMeter'] },
  ],
} as const satisfies DataAccess;
