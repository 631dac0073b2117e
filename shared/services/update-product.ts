import type { OperationAccess } from '../data/grants.ts';
import {
  getMeters,
  MeterArchivedMeanwhile,
  type MeterRecord,
  meterReferenceFailure,
  meterReferenceWrites,
  access as metersAccess,
} from '../data/meters.ts';
import {
  getProductForUpdate,
  ProductChanged,
  access as productsAccess,
  updateProductRecord,
} from '../data/products.ts';
import type { Metadata, ProductRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { canonicalJson } from '../domain/canonical-json.ts';
import {
  PolarRequestValidationError,
  ResourceNotFound,
  ServiceUnavailable,
  type ValidationIssue,
} from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { Product, UpdateProductBody } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { productEvent } from './create-product.ts';
import { DEFAULT_CURRENCY } from './organizations.ts';
import { presentProduct } from './presenters.ts';
import { meteredMeterIds, pricedMeterIds, replacePrices, unsupportedIssues } from './product-rules.ts';

/**
 * Attempts when a concurrent update wins the race: each re-reads and re-applies this one. An attempt
 * fails only when another update committed in between, so of n concurrent updates of one product
 * every one succeeds while n ≤ ATTEMPTS.
 */
const ATTEMPTS = 5;

const FIXED_AT_CREATION = 'is fixed when the product is created: create a new product instead.';

/**
 * The product as the body changes it (a field left out or null stays as it is; `description: null`
 * clears it). The recurring interval and its count cannot change: subscriptions were started on
 * them, and a recurring product cannot become one-time under its subscribers.
 */
function applied(
  product: ProductRecord,
  body: UpdateProductBody,
  currency: string,
  now: string,
  meters: ReadonlyMap<string, MeterRecord>,
): ProductRecord {
  const issues: ValidationIssue[] = unsupportedIssues(body);
  const fixed = (field: 'recurring_interval' | 'recurring_interval_count') => {
    const value = body[field];
    if (value != null && value !== product[field]) {
      const name = field === 'recurring_interval' ? 'The recurring interval' : 'The recurring interval count';
      issues.push({
        loc: ['body', field],
        msg: `${name} ${FIXED_AT_CREATION}`,
        type: 'value_error',
        input: value,
      });
    }
  };
  fixed('recurring_interval');
  fixed('recurring_interval_count');
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  return {
    ...product,
    name: body.name ?? product.name,
    description: body.description === undefined ? product.description : body.description,
    visibility: body.visibility ?? product.visibility,
    metadata: body.metadata === undefined ? product.metadata : (body.metadata as Metadata),
    is_archived: body.is_archived ?? product.is_archived,
    prices: body.prices
      ? replacePrices(product, body.prices, currency, now, {
          organizationId: product.organization_id,
          recurring: product.recurring_interval !== null,
          meters,
        })
      : product.prices,
  };
}

/**
 * A product that starts pricing a meter from a price it keeps (unarchived) needs that meter live:
 * 422 at `is_archived` naming an archived one. (A new price's meter was checked by the price rules;
 * `meters` holds those, read; the others are read here.)
 */
async function refuseArchivedMeters(
  deps: Dependencies,
  started: readonly string[],
  meters: ReadonlyMap<string, MeterRecord>,
): Promise<void> {
  const unread = started.filter((meterId) => !meters.has(meterId));
  const read = await getMeters(deps.table, unread);
  const archived = unread.filter((meterId) => read.get(meterId)?.archived_at != null);
  if (archived.length > 0) {
    throw new PolarRequestValidationError([
      {
        loc: ['body', 'is_archived'],
        msg: `A metered price of this product names an archived meter (${archived.join(', ')}): unarchive the meter first, or replace the price.`,
        type: 'value_error',
        input: false,
      },
    ]);
  }
}

/**
 * Updates a live product of one of the caller's organizations (another organization's, a deleted one
 * and an unknown id are the same 404). The write is conditioned on the product being as read; when
 * another update wins in between, this one is applied again on the fresh product. Its
 * `product.updated` event is written in the same transaction; a body that changes nothing writes
 * neither.
 */
export async function updateProduct(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  body: UpdateProductBody,
): Promise<Product> {
  const productId = normalizeId(id);
  // The meters its new metered prices name (a read only when there are some).
  let meters = await getMeters(deps.table, meteredMeterIds(body.prices ?? []));
  for (let attempt = 1; ; attempt++) {
    const read = await getProductForUpdate(deps.table, productId, principal.organizationIds);
    const { product } = read;
    if (
      !product ||
      product.deleted_at !== null ||
      !principal.organizationIds.includes(product.organization_id)
    ) {
      throw new ResourceNotFound();
    }
    const currency = read.organizations.get(product.organization_id)?.default_currency ?? DEFAULT_CURRENCY;
    const now = deps.now().toISOString();
    const changed = applied(product, body, currency, now, meters);
    // Nothing to change: nothing written, and `modified_at` stays.
    if (canonicalJson(changed) === canonicalJson(product)) return presentProduct(product);
    const after = { ...changed, modified_at: now };
    // The meters it starts or stops pricing (an archive stops them all), last (`meterReferenceFailure`).
    const pricedBefore = pricedMeterIds(product);
    const pricedAfter = pricedMeterIds(after);
    await refuseArchivedMeters(
      deps,
      [...pricedAfter].filter((meterId) => !pricedBefore.has(meterId)),
      meters,
    );
    const references = meterReferenceWrites(deps.table, pricedBefore, pricedAfter);
    try {
      await updateProductRecord(deps.table, product, after, [
        ...productEvent(deps.table, 'product.updated', after, now),
        ...references,
      ]);
      return presentProduct(after);
    } catch (caught) {
      const error = meterReferenceFailure(caught, references);
      // A meter archived since its read: read the meters again and decide again.
      if (error instanceof MeterArchivedMeanwhile) meters = await getMeters(deps.table, [...meters.keys()]);
      else if (!(error instanceof ProductChanged)) throw error;
      if (attempt === ATTEMPTS) throw new ServiceUnavailable();
    }
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  updateProduct: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...productsAccess.getProductForUpdate,
      ...metersAccess.getMeters,
      ...productsAccess.updateProductRecord,
      ...metersAccess.meterReferenceWrites,
    ],
  },
});
