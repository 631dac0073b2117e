/**
 * A customer as Create Customer wrote it before the customer lists were sharded (main e067a30): its
 * item without `list_layout` or `guard_layout`, with GSI1 keys (`ORG#<org>` /
 * `CUSTOMER#<created>#<id>`), its guards in the organization's partition (`legacyGuardKeys`), its
 * entries and count in the organization's old list partition `LIST#CUSTOMER#<org>`
 * (`legacyCustomerListing`). What a deployed table holds until `npm run admin -- customer
 * migrate-lists` and `customer migrate-guards` have run. `listed: 'sharded'`: as the code between
 * the two wrote it (entries in its shard, guards still in `ORG#<org>`).
 */
import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { customerEntry, customerListing, legacyCustomerListing } from '#shared/data/customers.ts';
import { createOnly, type Table, transact } from '#shared/data/dynamo.ts';
import { forgetListMarkers } from '#shared/data/list-markers.ts';
import { listedWrites } from '#shared/data/listing.ts';
import { type CustomerRecord, item, storedCustomer } from '#shared/data/records.ts';
import {
  CUSTOMER_GUARDS_MIGRATED,
  gsi1,
  keys,
  LISTS_MIGRATED,
  legacyGuardKeys,
  ownerKeys,
} from '#shared/data/table.ts';

export async function insertLegacyCustomer(
  table: Table,
  organizationId: string,
  n: number,
  options: { listed?: 'legacy' | 'sharded' } = {},
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
  // An organization with such a customer is one from before the marker (its guards not all moved).
  await unmarkOrganization(table, organizationId);
  const sharded = options.listed === 'sharded';
  const itemKeys = {
    ...keys.customer(customer.id),
    ...gsi1.ownedBy(ownerKeys.organization(organizationId), 'CUSTOMER', customer.created_at, customer.id),
  };
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(itemKeys, 'customer', {
          ...storedCustomer(customer),
          ...(sharded ? { list_layout: 'sharded' } : {}),
        }),
      ),
    },
    guard(legacyGuardKeys.customerEmail(customer.organization_id, customer.email as string)),
    guard(legacyGuardKeys.customerExternalId(customer.organization_id, customer.external_id as string)),
    ...listedWrites(table, sharded ? customerListing : legacyCustomerListing, customerEntry(customer)),
  ]);
  return customer;
}

/**
 * The organization as created before the guards had partitions of their own: without the marker
 * `customer_guards` (its customers' guards may be in `ORG#<org>`) nor `customer_lists` (its
 * customers may be listed in `LIST#CUSTOMER#<org>`).
 */
export async function unmarkOrganization(table: Table, organizationId: string): Promise<void> {
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.organization(organizationId),
      UpdateExpression: 'REMOVE #marker, #lists',
      ExpressionAttributeNames: {
        '#marker': CUSTOMER_GUARDS_MIGRATED.attribute,
        // And from before the list marker: its customer lists may hold entries in the old partition.
        '#lists': LISTS_MIGRATED.customers.attribute,
      },
    }),
  );
  forgetListMarkers(table, [organizationId]);
}
