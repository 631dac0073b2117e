/**
 * A customer as Create Customer wrote it before the customer lists were sharded (main e067a30): its
 * item without `list_layout`, its guards, its entries and count in the organization's old list
 * partition `LIST#CUSTOMER#<org>` (`legacyCustomerListing`). What a deployed table holds until
 * `npm run admin -- customer migrate-lists` has run.
 */
import { randomUUID } from 'node:crypto';
import { customerEntry, legacyCustomerListing } from '#shared/data/customers.ts';
import { createOnly, type Table, transact } from '#shared/data/dynamo.ts';
import { listedWrites } from '#shared/data/listing.ts';
import { type CustomerRecord, item, storedCustomer } from '#shared/data/records.ts';
import { keys } from '#shared/data/table.ts';

export async function insertLegacyCustomer(
  table: Table,
  organizationId: string,
  n: number,
): Promise<CustomerRecord> {
  const customer: CustomerRecord = {
    id: randomUUID(),
    organization_id: organizationId,
    created_at: new Date(Date.UTC(2025, 0, 1, 0, n)).toISOString(),
    modified_at: null,
    metadata: { n },
    external_id: `old-${n}-${randomUUID().slice(0, 8)}`,
    email: `old-${n}-${randomUUID().slice(0, 8)}@example.com`,
    email_verified: false,
    type: 'individual',
    name: `Old ${n}`,
    billing_name: null,
    billing_address: null,
    tax_id: null,
    locale: null,
    deleted_at: null,
    wallet_count: 0,
  };
  const guard = (key: { PK: string; SK: string }) => ({
    Put: createOnly(table, { ...key, entity: 'customer_guard', customer_id: customer.id }),
  });
  await transact(table, [
    { Put: createOnly(table, item(keys.customer(customer.id), 'customer', storedCustomer(customer))) },
    guard(keys.customerEmail(customer.organization_id, customer.email as string)),
    guard(keys.customerExternalId(customer.organization_id, customer.external_id as string)),
    ...listedWrites(table, legacyCustomerListing, customerEntry(customer)),
  ]);
  return customer;
}
