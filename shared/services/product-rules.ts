/**
 * The catalogue rules Create Product and Update Product share: which hosted features are refused,
 * and what makes a price list valid. Each rule is a 422 `PolarRequestValidationError`; every fault
 * of a request is reported at once.
 */
import type { MeterRecord } from '../data/meters.ts';
import type { PriceRecord, ProductRecord, TaxBehavior } from '../data/records.ts';
import { PolarRequestValidationError, type ValidationIssue } from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import { parseUnitAmount } from '../domain/metered-amount.ts';
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

/** What a metered price is checked against: the product's organization and kind, the meters it names. */
export interface MeteredContext {
  organizationId: string;
  recurring: boolean;
  /** The meters the body's metered prices name, as read (absent: unknown). */
  meters: ReadonlyMap<string, MeterRecord>;
}

/**
 * The meters a product prices: those its unarchived metered prices name, while it is live and not
 * archived (what the meters' counts of pricing products count: shared/data/meters.ts).
 */
export function pricedMeterIds(product: ProductRecord): Set<string> {
  if (product.is_archived || product.deleted_at !== null) return new Set();
  return new Set(
    product.prices.flatMap((price) =>
      !price.is_archived && price.amount_type === 'metered_unit' ? [price.meter_id] : [],
    ),
  );
}

/** The meter ids a body's new metered prices name (to read them before the rules run). */
export const meteredMeterIds = (items: readonly unknown[]): string[] => [
  ...new Set(
    items.flatMap((item) => {
      const price = item as { amount_type?: string; meter_id?: string };
      return price.amount_type === 'metered_unit' && typeof price.meter_id === 'string'
        ? [normalizeId(price.meter_id)]
        : [];
    }),
  ),
];

/**
 * The rules of the new metered prices among `items` (each at its index): a recurring product, a
 * unit amount the hosted service would store, a live meter of the product's organization (another
 * organization's meter is the same "does not exist").
 */
export function meteredIssues(
  items: readonly unknown[],
  context: MeteredContext | undefined,
): ValidationIssue[] {
  return items.flatMap((item, index): ValidationIssue[] => {
    const price = item as Partial<ProductPriceCreate> & { id?: string };
    if (price.id !== undefined || price.amount_type !== 'metered_unit') return [];
    const at = ['prices', String(index)];
    if (!context?.recurring)
      return [issue(at, 'Metered pricing is not supported on one-time products.', item)];
    const found: ValidationIssue[] = [];
    const unit = parseUnitAmount(price.unit_amount as string | number);
    if (!unit.ok) found.push(issue([...at, 'unit_amount'], unit.msg, price.unit_amount));
    const meter = context.meters.get(normalizeId(price.meter_id as string));
    if (!meter || meter.organization_id !== context.organizationId) {
      found.push(issue([...at, 'meter_id'], 'Meter does not exist.', price.meter_id));
    } else if (meter.archived_at !== null) {
      found.push(issue([...at, 'meter_id'], 'Meter is archived.', price.meter_id));
    }
    return found;
  });
}

/**
 * A new price: a fixed amount (the legacy `free` is a fixed 0), or a metered one (its rules checked
 * by `meteredIssues` first), in the default currency unless named.
 */
export function newPrice(
  input: ProductPriceCreate,
  defaultCurrency: string,
  now: string,
  context?: MeteredContext,
): PriceRecord {
  const base = {
    id: newId(),
    created_at: now,
    modified_at: null,
    price_currency: input.price_currency ?? defaultCurrency,
    tax_behavior: (input.tax_behavior ?? null) as TaxBehavior | null,
    is_archived: false,
  };
  if (input.amount_type === 'metered_unit') {
    const meter = context?.meters.get(normalizeId(input.meter_id as string));
    const unit = parseUnitAmount(input.unit_amount as string | number);
    if (!meter || !unit.ok) throw new Error('metered price not checked by meteredIssues');
    return {
      ...base,
      amount_type: 'metered_unit',
      unit_amount: unit.text,
      cap_amount: input.cap_amount ?? null,
      meter_id: meter.id,
      meter: {
        id: meter.id,
        name: meter.name,
        unit: meter.unit,
        custom_label: meter.custom_label,
        custom_multiplier: meter.custom_multiplier,
      },
    };
  }
  return {
    ...base,
    amount_type: 'fixed',
    price_amount: input.amount_type === 'free' ? 0 : (input.price_amount ?? 0),
  };
}

/**
 * A live price list is one fixed price per currency, one of them in the organization's default
 * currency, and metered prices beside the fixed price of their currency; it is stored with the
 * default currency's fixed price first (the price the product sorts by), then its metered prices,
 * then the others in the order given.
 */
export function checkLivePrices(live: PriceRecord[], defaultCurrency: string, input: unknown): PriceRecord[] {
  const issues: ValidationIssue[] = [];
  const fixed = new Set<string>();
  live.forEach((price, index) => {
    if (price.amount_type !== 'fixed') return;
    if (fixed.has(price.price_currency)) {
      issues.push(
        issue(['prices', String(index)], 'Only one price per currency is allowed.', price.price_currency),
      );
    }
    fixed.add(price.price_currency);
  });
  live.forEach((price, index) => {
    if (price.amount_type === 'metered_unit' && !fixed.has(price.price_currency)) {
      issues.push(
        issue(
          ['prices', String(index)],
          'A metered price needs a fixed price in its currency (0 for none).',
          price.price_currency,
        ),
      );
    }
  });
  if (!fixed.has(defaultCurrency)) {
    issues.push(
      issue(
        ['prices'],
        "The organization's default presentment currency must be present in the prices.",
        input,
      ),
    );
  }
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  const inDefault = (price: PriceRecord) => price.price_currency === defaultCurrency;
  return [
    ...live.filter((price) => inDefault(price) && price.amount_type === 'fixed'),
    ...live.filter((price) => inDefault(price) && price.amount_type !== 'fixed'),
    ...live.filter((price) => !inDefault(price)),
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
  context?: MeteredContext,
): PriceRecord[] {
  const live = new Map(product.prices.filter((p) => !p.is_archived).map((p) => [p.id, p]));
  const issues: ValidationIssue[] = meteredIssues(items, context);
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  const next = items.map((item, index) => {
    if (item.id === undefined) return newPrice(item as ProductPriceCreate, defaultCurrency, now, context);
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
