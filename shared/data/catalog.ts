import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { ServiceUnavailable } from '../domain/errors.ts';
import { readGuards } from './customer-guards.ts';
import { run, type Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import {
  type CustomerRecord,
  customerRecord,
  type OrganizationRecord,
  type ProductRecord,
  productRecord,
  record,
  type SubscriptionRecord,
  subscriptionRecord,
} from './records.ts';
import { type Key, keys } from './table.ts';

const BATCH_ATTEMPTS = 3;
/** BatchGetItem takes at most 100 keys per call. */
const BATCH_LIMIT = 100;

/** How `readMany` files what it found: by the item's whole key. */
export const keyId = (key: { PK: unknown; SK: unknown }): string =>
  `${String(key.PK)}\u0000${String(key.SK)}`;

/**
 * Reads many items by key (one BatchGetItem per 100 keys), by `keyId`; unprocessed keys are retried
 * a bounded number of times.
 */
export async function readMany(table: Table, wanted: Key[]): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  for (let offset = 0; offset < wanted.length; offset += BATCH_LIMIT) {
    let pending: Key[] = wanted.slice(offset, offset + BATCH_LIMIT);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt === BATCH_ATTEMPTS) throw new ServiceUnavailable();
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** attempt));
      const keysToRead = pending;
      // Strongly consistent: an eventually consistent read could still show a customer or
      // product deleted a moment ago, so the create's transaction would be refused twice
      // on the same stale answer (a 500), or miss one created a moment ago (a wrong 422).
      const result = await run(() =>
        table.doc.send(
          new BatchGetCommand({ RequestItems: { [table.name]: { Keys: keysToRead, ConsistentRead: true } } }),
        ),
      );
      for (const stored of result.Responses?.[table.name] ?? []) found.set(keyId(stored as Key), stored);
      pending = (result.UnprocessedKeys?.[table.name]?.Keys ?? []) as Key[];
    }
  }
  return found;
}

export interface SubscriptionInputs {
  product?: ProductRecord;
  customer?: CustomerRecord;
  /** Which of the `also` keys exist (`keyId`). */
  present: ReadonlySet<string>;
  /** The caller's organizations that exist, by id (for the default currency). */
  organizations: Map<string, OrganizationRecord>;
}

/**
 * Product, customer and the caller's organizations in one round trip, and whether the `also` keys
 * exist (Create Subscription's segment registry items, `sharedSegmentKeys`).
 */
export async function getSubscriptionInputs(
  table: Table,
  productId: string,
  customerId: string,
  organizationIds: readonly string[],
  also: readonly Key[] = [],
): Promise<SubscriptionInputs> {
  const found = await readMany(table, [
    keys.product(productId),
    keys.customer(customerId),
    ...organizationIds.map((id) => keys.organization(id)),
    ...also,
  ]);
  const product = found.get(keyId(keys.product(productId)));
  const customer = found.get(keyId(keys.customer(customerId)));
  const organizations = new Map<string, OrganizationRecord>();
  for (const id of organizationIds) {
    const stored = found.get(keyId(keys.organization(id)));
    if (stored) organizations.set(id, record<OrganizationRecord>(stored));
  }
  return {
    ...(product ? { product: productRecord(product) } : {}),
    ...(customer ? { customer: customerRecord(customer) } : {}),
    organizations,
    present: new Set(also.map(keyId).filter((id) => found.has(id))),
  };
}

/** A customer by id; `consistent` reads what the last write wrote (a change reads what it changes). */
export async function getCustomer(
  table: Table,
  customerId: string,
  consistent = false,
): Promise<CustomerRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.customer(customerId), ConsistentRead: consistent }),
    ),
  );
  return result.Item ? customerRecord(result.Item) : undefined;
}

/** Who a customer-session request names, among the caller's organizations, and those organizations. */
export interface SessionCustomerLookup {
  /** Live customers of the caller's organizations the request names (0, 1, or several for an external id). */
  customers: CustomerRecord[];
  organizations: Map<string, OrganizationRecord>;
}

/**
 * By id: one batch (the customer and the organizations). By external id: one batch of the
 * organizations and their external-id guard items (`readGuards`: the old keys too where an
 * organization is not yet migrated), then one of the customers the guards name.
 */
export async function findSessionCustomer(
  table: Table,
  by: { customerId: string } | { externalId: string },
  organizationIds: readonly string[],
): Promise<SessionCustomerLookup> {
  const organizationKeys = organizationIds.map((id) => keys.organization(id));
  let candidates: Record<string, unknown>[];
  let found: Map<string, Record<string, unknown>>;
  if ('customerId' in by) {
    found = await readMany(table, [keys.customer(by.customerId), ...organizationKeys]);
    const stored = found.get(keyId(keys.customer(by.customerId)));
    candidates = stored ? [stored] : [];
  } else {
    const guards = await readGuards(
      table,
      organizationIds.map((organizationId) => ({
        organizationId,
        field: 'external_id',
        value: by.externalId,
      })),
      organizationKeys,
    );
    found = guards.found;
    const ids = guards.holders.filter((id) => id !== undefined);
    const customers =
      ids.length > 0
        ? await readMany(
            table,
            ids.map((id) => keys.customer(id)),
          )
        : new Map();
    candidates = ids.map((id) => customers.get(keyId(keys.customer(id)))).filter((c) => c !== undefined);
  }
  const organizations = new Map<string, OrganizationRecord>();
  for (const id of organizationIds) {
    const stored = found.get(keyId(keys.organization(id)));
    if (stored) organizations.set(id, record<OrganizationRecord>(stored));
  }
  const customers = candidates
    .map((stored) => customerRecord(stored))
    .filter((customer) => customer.deleted_at === null && organizations.has(customer.organization_id));
  return { customers, organizations };
}

export async function getProduct(table: Table, productId: string): Promise<ProductRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.product(productId) })),
  );
  return result.Item ? productRecord(result.Item) : undefined;
}

/** The customer and the product a subscription embeds, in one batch. */
export async function getCustomerAndProduct(
  table: Table,
  customerId: string,
  productId: string,
): Promise<{ customer?: CustomerRecord; product?: ProductRecord }> {
  const { customers, products } = await getCustomersAndProducts(table, [customerId], [productId]);
  const customer = customers.get(customerId);
  const product = products.get(productId);
  return { ...(customer ? { customer } : {}), ...(product ? { product } : {}) };
}

/** Customers and products by id (those that exist), in one batch per 100 keys. */
export async function getCustomersAndProducts(
  table: Table,
  customerIds: readonly string[],
  productIds: readonly string[],
): Promise<{ customers: Map<string, CustomerRecord>; products: Map<string, ProductRecord> }> {
  const customerKeys = [...new Set(customerIds)].map((id) => keys.customer(id));
  const productKeys = [...new Set(productIds)].map((id) => keys.product(id));
  const found = await readMany(table, [...customerKeys, ...productKeys]);
  const customers = new Map<string, CustomerRecord>();
  const products = new Map<string, ProductRecord>();
  for (const key of customerKeys) {
    const stored = found.get(keyId(key));
    if (stored) customers.set(String(stored.id), customerRecord(stored));
  }
  for (const key of productKeys) {
    const stored = found.get(keyId(key));
    if (stored) products.set(String(stored.id), productRecord(stored));
  }
  return { customers, products };
}

/** What a customer-portal request reads besides the subscriptions: the session's customer and organization. */
export interface PortalContext {
  customer?: CustomerRecord;
  organization?: OrganizationRecord;
  products: Map<string, ProductRecord>;
  subscription?: SubscriptionRecord;
}

/**
 * The session's customer (still live?) and organization, with the products and the subscription a
 * portal request names, in one batch per 100 keys (strongly consistent: a change is decided on it).
 */
export async function readPortalContext(
  table: Table,
  customerId: string,
  organizationId: string,
  wanted: { productIds?: readonly string[]; subscriptionId?: string },
): Promise<PortalContext> {
  const productKeys = [...new Set(wanted.productIds ?? [])].map((id) => keys.product(id));
  const subscriptionKey = wanted.subscriptionId ? keys.subscription(wanted.subscriptionId) : undefined;
  const found = await readMany(table, [
    keys.customer(customerId),
    keys.organization(organizationId),
    ...productKeys,
    ...(subscriptionKey ? [subscriptionKey] : []),
  ]);
  const customer = found.get(keyId(keys.customer(customerId)));
  const organization = found.get(keyId(keys.organization(organizationId)));
  const subscription = subscriptionKey ? found.get(keyId(subscriptionKey)) : undefined;
  const products = new Map<string, ProductRecord>();
  for (const key of productKeys) {
    const stored = found.get(keyId(key));
    if (stored) products.set(String(stored.id), productRecord(stored));
  }
  return {
    ...(customer ? { customer: customerRecord(customer) } : {}),
    ...(organization ? { organization: record<OrganizationRecord>(organization) } : {}),
    ...(subscription ? { subscription: subscriptionRecord(subscription) } : {}),
    products,
  };
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /** One batch: the product, the customer and the caller's organizations (default currency). */
  /**
   * One batch: the product, the customer, the caller's organizations and the segment registry items
   * of the organization's and the product's subscription lists (one statement: IAM judges a batch's
   * keys against each statement on its own).
   */
  getSubscriptionInputs: [
    {
      actions: ['dynamodb:BatchGetItem'],
      leadingKeys: ['product', 'customer', 'organization', 'subscriptionList', 'subscriptionProductList'],
    },
  ],
  /**
   * One batch reads the customer (by id) or its external-id guards, and the caller's organizations
   * (for the portal URL's slug); a second batch reads the customer an external id names.
   */
  findSessionCustomer: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'organization', 'customerExternalId'] },
  ],
  getCustomer: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['customer'] }],
  getProduct: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['product'] }],
  getCustomerAndProduct: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'product'] }],
  getCustomersAndProducts: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'product'] }],
  /** `readPortalContext` of one subscription: the session's customer (still live?), its organization and the subscription. */
  readPortalContextOfSubscription: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'organization', 'subscription'] },
  ],
  /** `readPortalContext` of a page of subscriptions: the customer (still live?), its organization and the page's products, in one batch. */
  readPortalContextOfProducts: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'organization', 'product'] },
  ],
} as const satisfies DataAccess;
