/**
 * A product as Create Product wrote it before the product lists were sharded: its item without
 * `list_layout`, with GSI1 keys (`ORG#<org>` / `PRODUCT#<created>#<id>`), its entries and counts in
 * the organization's old list partition `LIST#PRODUCT#<org>` and its views
 * (`legacyProductListing`). What a deployed table holds until `npm run admin -- product
 * migrate-lists` has run.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createOnly, type Table, transact } from '#shared/data/dynamo.ts';
import { forgetListMarkers } from '#shared/data/list-markers.ts';
import { listedWrites } from '#shared/data/listing.ts';
import { legacyProductListing } from '#shared/data/products.ts';
import { item, type ProductRecord, storedProduct } from '#shared/data/records.ts';
import { gsi1, keys, LISTS_MIGRATED, ownerKeys } from '#shared/data/table.ts';
import { newProduct } from '#shared/services/create-product.ts';

export async function insertLegacyProduct(
  table: Table,
  organizationId: string,
  n: number,
  shape: { name?: string; amount?: number; recurring?: boolean; archived?: boolean } = {},
): Promise<ProductRecord> {
  const fresh = newProduct(
    {
      name: shape.name ?? `Old ${n}`,
      ...(shape.recurring === false ? {} : { recurring_interval: 'month' }),
      prices: [{ amount_type: 'fixed', price_amount: shape.amount ?? 100 * n }],
      metadata: { n },
    },
    organizationId,
    'usd',
    new Date(Date.UTC(2025, 0, 1, 0, n)),
  );
  const product: ProductRecord = { ...fresh, is_archived: shape.archived ?? false };
  // An organization with such a product is one from before the list marker.
  await unmarkProductLists(table, organizationId);
  const stored = storedProduct(product);
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(
          {
            ...keys.product(product.id),
            ...gsi1.ownedBy(
              ownerKeys.organization(organizationId),
              'PRODUCT',
              product.created_at,
              product.id,
            ),
          },
          'product',
          stored,
        ),
      ),
    },
    ...listedWrites(table, legacyProductListing, stored),
  ]);
  return product;
}

/** The organization as created before the list marker: without `product_lists`. */
export async function unmarkProductLists(table: Table, organizationId: string): Promise<void> {
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.organization(organizationId),
      UpdateExpression: 'REMOVE #lists',
      ExpressionAttributeNames: { '#lists': LISTS_MIGRATED.products.attribute },
    }),
  );
  forgetListMarkers(table, [organizationId]);
}
