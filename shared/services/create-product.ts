import type { Table } from '../data/dynamo.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import {
  getMeters,
  MeterArchivedMeanwhile,
  type MeterRecord,
  meterReferenceFailure,
  meterReferenceWrites,
  access as metersAccess,
} from '../data/meters.ts';
import { getOrganization, access as organizationsAccess } from '../data/organizations.ts';
import { outboxWrites } from '../data/outbox.ts';
import { createProductRecord, access as productsAccess } from '../data/products.ts';
import type { Metadata, ProductRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { CreateProductBody, Product } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { DEFAULT_CURRENCY, organizationFor } from './organizations.ts';
import { presentProduct } from './presenters.ts';
import {
  checkLivePrices,
  meteredIssues,
  meteredMeterIds,
  newPrice,
  pricedMeterIds,
  unsupportedIssues,
} from './product-rules.ts';

/**
 * A new product of an organization from a Create Product body, every rule checked: the record Create
 * Product writes, and the one the operator CLI and the demo seed write.
 */
export function newProduct(
  body: CreateProductBody,
  organizationId: string,
  defaultCurrency: string,
  now: Date,
  meters: ReadonlyMap<string, MeterRecord> = new Map(),
): ProductRecord {
  const issues = unsupportedIssues(body);
  const interval = body.recurring_interval ?? null;
  const metered = { organizationId, recurring: interval !== null, meters };
  issues.push(...meteredIssues(body.prices, metered));
  if (interval === null && body.recurring_interval_count != null) {
    issues.push({
      loc: ['body', 'recurring_interval_count'],
      msg: 'A one-time product has no recurring interval count.',
      type: 'value_error',
      input: body.recurring_interval_count,
    });
  }
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  const created = now.toISOString();
  return {
    id: newId(),
    organization_id: organizationId,
    created_at: created,
    modified_at: null,
    name: body.name,
    description: body.description ?? null,
    visibility: body.visibility ?? 'public',
    recurring_interval: interval,
    recurring_interval_count: interval === null ? null : (body.recurring_interval_count ?? 1),
    is_archived: false,
    metadata: (body.metadata ?? {}) as Metadata,
    prices: checkLivePrices(
      body.prices.map((price) => newPrice(price, defaultCurrency, created, metered)),
      defaultCurrency,
      body.prices,
    ),
    deleted_at: null,
    version: 1,
  };
}

/** A product's event (`product.created`, `product.updated`): the product as the API answers it, at `at`. */
export const productEvent = (
  table: Table,
  type: 'product.created' | 'product.updated',
  product: ProductRecord,
  at: string,
) =>
  outboxWrites(
    table,
    { kind: 'product', id: product.id, organizationId: product.organization_id },
    at,
    [{ type, data: presentProduct(product) }],
    newId,
  );

/**
 * Writes a new product with its list entries and its `product.created` event, in one transaction:
 * Create Product, and the operator CLI and the demo seed.
 */
export async function storeNewProduct(table: Table, product: ProductRecord): Promise<void> {
  // The meters it prices, counted and checked not archived, last (`meterReferenceFailure`).
  const references = meterReferenceWrites(table, new Set(), pricedMeterIds(product));
  try {
    await createProductRecord(table, product, [
      ...productEvent(table, 'product.created', product, product.created_at),
      ...references,
    ]);
  } catch (error) {
    throw meterReferenceFailure(error, references);
  }
}

/**
 * Creates a product of one of the caller's organizations, with its prices, listed in the
 * organization's product list and with its `product.created` event, in one transaction.
 */
export async function createProduct(
  deps: Dependencies,
  principal: UserPrincipal,
  body: CreateProductBody,
): Promise<Product> {
  const organizationId = organizationFor(principal, body.organization_id);
  const organization = await getOrganization(deps.table, organizationId);
  const currency = organization?.default_currency ?? DEFAULT_CURRENCY;
  for (let attempt = 1; ; attempt++) {
    // The meters its metered prices name (a read only when there are some).
    const meters = await getMeters(deps.table, meteredMeterIds(body.prices));
    const product = newProduct(body, organizationId, currency, deps.now(), meters);
    try {
      await storeNewProduct(deps.table, product);
    } catch (error) {
      // A meter archived since its read: read again, and the rules refuse it (422 at its price).
      if (error instanceof MeterArchivedMeanwhile && attempt < 2) continue;
      throw error;
    }
    countBusinessEvent('ProductsCreated');
    return presentProduct(product);
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createProduct: {
    table: [
      // The token, and the organization (its default currency).
      oneStatement(tokensAccess.findToken, organizationsAccess.getOrganization),
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...metersAccess.getMeters,
      ...productsAccess.createProductRecord,
      ...metersAccess.meterReferenceWrites,
    ],
  },
});
