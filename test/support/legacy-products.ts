/**
 * A product as Create Product wrote it before the product lists were sharded: its item without
 * `list_layout`, with GSI1 keys (`ORG#<org>` / `PRODUCT#<created>#<id>`), its entries and counts in
 * the organization's old list partition `LIST#PRODUCT#<org>` and its views
 * (`legacyProductListing`). What a deployed table holds until `npm run admin -- product
 * migrate-lists` has run.
 */
import { createOnly, type Table, transact } from '#shared/data/dynamo.ts';
import { listedWrites } from '#shared/data/listing.ts';
import { legacyProductListing } from '#shared/data/products.ts';
import { item, type ProductRecord, storedProduct } from '#shared/data/records.ts';
import { gsi1, keys, ownerKeys } from '#shared/data/table.ts';
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
