/**
 * The catalogue rules Create Product and Update Product share: which hosted features are refused,
 * and what makes a price list valid. Each rule is a 422 `PolarRequestValidationError`; every fault
 * of a request is reported at once.
 */
import type { PriceRecord, ProductRecord, TaxBehavior } from '../data/records.ts';
import { PolarRequestValidationError, type ValidationIssue } from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import type { ProductPriceCreate, UnsupportedProductFields } from '../generated/api-types.ts';

/**
 * A product keeps its archived prices (subscriptions billed on them still show them); this bounds
 * the item, so that a product and its list entries always fit one transaction.
 */
export const MAX_STORED_PRICES = 100;

const issue = (loc: string[], msg: string, input: unknown): ValidationIssue => ({
  loc: ['body', ...loc],
  msg,
  type: 'value_error',
  input,
});

const UNSUPPORTED: Record<keyof UnsupportedProductFields, string> = {
  trial_interval: 'Trials are not supported by this API.',
  trial_interval_count: 'Trials are not supported by this API.',
  meter_interval: 'Metered billing is not supported by this API.',
  meter_interval_count: 'Metered billing is not supported by this API.',
  medias: 'Product media are not supported by this API.',
  attached_custom_fields: 'Custom fields are not supported by this API.',
};

/** Hosted features a body may name only to leave them out: null, or an empty list. */
export function unsupportedIssues(body: UnsupportedProductFields): ValidationIssue[] {
  return (Object.keys(UNSUPPORTED) as (keyof UnsupportedProductFields)[]).flatMap((field) => {
    const value = body[field];
    const empty = value === undefined || value === null || (Array.isArray(value) && value.length === 0);
    return empty ? [] : [issue([field], UNSUPPORTED[field], value)];
  });
}

/** A new price: a fixed amount (the legacy `free` is a fixed 0), in the default currency unless named. */
export function newPrice(input: ProductPriceCreate, defaultCurrency: string, now: string): PriceRecord {
  return {
    id: newId(),
    created_at: now,
    modified_at: null,
    amount_type: 'fixed',
    price_currency: input.price_currency ?? defaultCurrency,
    price_amount: input.amount_type === 'free' ? 0 : (input.price_amount ?? 0),
    tax_behavior: (input.tax_behavior ?? null) as TaxBehavior | null,
    is_archived: false,
  };
}

/**
 * A live price list is one price per currency, one of them in the organization's default
 * currency; it is stored with that one first (the price the product sorts by), the others in the
 * order given.
 */
export function checkLivePrices(live: PriceRecord[], defaultCurrency: string, input: unknown): PriceRecord[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  live.forEach((price, index) => {
    if (seen.has(price.price_currency)) {
      issues.push(
        issue(['prices', String(index)], 'Only one price per currency is allowed.', price.price_currency),
      );
    }
    seen.add(price.price_currency);
  });
  if (!seen.has(defaultCurrency)) {
    issues.push(
      issue(
        ['prices'],
        "The organization's default presentment currency must be present in the prices.",
        input,
      ),
    );
  }
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  return [
    ...live.filter((price) => price.price_currency === defaultCurrency),
    ...live.filter((price) => price.price_currency !== defaultCurrency),
  ];
}

type PriceUpdate = { id?: string } & Partial<ProductPriceCreate>;

/**
 * An update's price list replacing the product's: `{id}` keeps one of its live prices, anything
 * else is a new price, and every live price left out is archived, not removed.
 */
export function replacePrices(
  product: ProductRecord,
  items: readonly PriceUpdate[],
  defaultCurrency: string,
  now: string,
): PriceRecord[] {
  const live = new Map(product.prices.filter((p) => !p.is_archived).map((p) => [p.id, p]));
  const issues: ValidationIssue[] = [];
  const next = items.map((item, index) => {
    if (item.id === undefined) return newPrice(item as ProductPriceCreate, defaultCurrency, now);
    const kept = live.get(normalizeId(item.id));
    if (!kept) issues.push(issue(['prices', String(index), 'id'], 'Price does not exist.', item.id));
    return kept;
  });
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  const ordered = checkLivePrices(next as PriceRecord[], defaultCurrency, items);
  const keptIds = new Set(ordered.map((price) => price.id));
  const archived = [
    ...product.prices.filter((price) => price.is_archived),
    ...[...live.values()]
      .filter((price) => !keptIds.has(price.id))
      .map((price) => ({ ...price, is_archived: true, modified_at: now })),
  ];
  const prices = [...ordered, ...archived];
  if (prices.length > MAX_STORED_PRICES) {
    throw new PolarRequestValidationError([
      issue(
        ['prices'],
        `A product keeps at most ${MAX_STORED_PRICES} prices, archived ones included: create a new product instead.`,
        items,
      ),
    ]);
  }
  return prices;
}
