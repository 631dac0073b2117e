import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed, ServiceUnavailable } from '../domain/errors.ts';
import { createOnly, putNew, run, type Table, transact } from './dynamo.ts';
import {
  type CustomerRecord,
  customerRecord,
  item,
  type OrganizationRecord,
  type ProductRecord,
  record,
  storedCustomer,
} from './records.ts';
import { gsi1, type Key, keys, ownerKeys } from './table.ts';

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
  /** The caller's organizations that exist, by id (for the default currency). */
  organizations: Map<string, OrganizationRecord>;
}

/** Product, customer and the caller's organizations in one round trip. */
export async function getSubscriptionInputs(
  table: Table,
  productId: string,
  customerId: string,
  organizationIds: readonly string[],
): Promise<SubscriptionInputs> {
  const found = await readMany(table, [
    keys.product(productId),
    keys.customer(customerId),
    ...organizationIds.map((id) => keys.organization(id)),
  ]);
  const product = found.get(keyId(keys.product(productId)));
  const customer = found.get(keyId(keys.customer(customerId)));
  const organizations = new Map<string, OrganizationRecord>();
  for (const id of organizationIds) {
    const stored = found.get(keyId(keys.organization(id)));
    if (stored) organizations.set(id, record<OrganizationRecord>(stored));
  }
  return {
    ...(product ? { product: record<ProductRecord>(product) } : {}),
    ...(customer ? { customer: customerRecord(customer) } : {}),
    organizations,
  };
}

export async function getCustomer(table: Table, customerId: string): Promise<CustomerRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.customer(customerId) })),
  );
  return result.Item ? customerRecord(result.Item) : undefined;
}

export async function insertProduct(table: Table, product: ProductRecord): Promise<void> {
  const owner = ownerKeys.organization(product.organization_id);
  await putNew(
    table,
    item(
      { ...keys.product(product.id), ...gsi1.ownedBy(owner, 'PRODUCT', product.created_at, product.id) },
      'product',
      product,
    ),
  );
}

/** A customer is unique per organization by email and by external id: guard items enforce both. */
/** Which uniqueness guard refused a new customer: its e-mail or its external id is taken. */
export class CustomerTaken extends Error {
  constructor(readonly field: 'email' | 'external_id') {
    super(`customer ${field} taken`);
    this.name = 'CustomerTaken';
  }
}

/**
 * A new customer and its uniqueness guards in one transaction. A guard that exists already is
 * reported as `CustomerTaken` naming the field (the transaction's cancellation reasons are in item
 * order: the customer, then the e-mail guard, then the external-id guard). The SDK retries a
 * transaction with the same client request token, so a retry of one that was applied succeeds.
 */
export async function createCustomerRecord(table: Table, customer: CustomerRecord): Promise<void> {
  try {
    await insertCustomer(table, customer);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const [, ...guardReasons] = error.reasons;
    const fields = [
      ...(customer.email ? (['email'] as const) : []),
      ...(customer.external_id ? (['external_id'] as const) : []),
    ];
    const taken = fields.find((_, i) => guardReasons[i] === 'ConditionalCheckFailed');
    if (taken) throw new CustomerTaken(taken);
    throw error;
  }
}

export async function insertCustomer(table: Table, customer: CustomerRecord): Promise<void> {
  const owner = ownerKeys.organization(customer.organization_id);
  const guards = [
    customer.email ? keys.customerEmail(customer.organization_id, customer.email) : undefined,
    customer.external_id
      ? keys.customerExternalId(customer.organization_id, customer.external_id)
      : undefined,
  ].filter((guard) => guard !== undefined);
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(
          {
            ...keys.customer(customer.id),
            ...gsi1.ownedBy(owner, 'CUSTOMER', customer.created_at, customer.id),
          },
          'customer',
          storedCustomer(customer),
        ),
      ),
    },
    ...guards.map((guard) => ({
      Put: createOnly(table, { ...guard, entity: 'customer_guard', customer_id: customer.id }),
    })),
  ]);
}

/** Who a customer-session request names, among the caller's organizations, and those organizations. */
export interface SessionCustomerLookup {
  /** Live customers of the caller's organizations the request names (0, 1, or several for an external id). */
  customers: CustomerRecord[];
  organizations: Map<string, OrganizationRecord>;
}

/**
 * By id: one batch (the customer and the organizations). By external id: one batch of the
 * organizations and their external-id guard items, then one of the customers the guards name.
 */
export async function findSessionCustomer(
  table: Table,
  by: { customerId: string } | { externalId: string },
  organizationIds: readonly string[],
): Promise<SessionCustomerLookup> {
  const organizationKeys = organizationIds.map((id) => keys.organization(id));
  const lookups =
    'customerId' in by
      ? [keys.customer(by.customerId)]
      : organizationIds.map((id) => keys.customerExternalId(id, by.externalId));
  const found = await readMany(table, [...lookups, ...organizationKeys]);
  const organizations = new Map<string, OrganizationRecord>();
  for (const id of organizationIds) {
    const stored = found.get(keyId(keys.organization(id)));
    if (stored) organizations.set(id, record<OrganizationRecord>(stored));
  }
  let candidates = lookups.map((key) => found.get(keyId(key))).filter((stored) => stored !== undefined);
  if ('externalId' in by) {
    const ids = candidates.map((guard) => String(guard.customer_id));
    const customers =
      ids.length > 0
        ? await readMany(
            table,
            ids.map((id) => keys.customer(id)),
          )
        : new Map();
    candidates = ids.map((id) => customers.get(keyId(keys.customer(id)))).filter((c) => c !== undefined);
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
  return result.Item ? record<ProductRecord>(result.Item) : undefined;
}

/** The customer and the product a subscription embeds, in one batch. */
export async function getCustomerAndProduct(
  table: Table,
  customerId: string,
  productId: string,
): Promise<{ customer?: CustomerRecord; product?: ProductRecord }> {
  const found = await readMany(table, [keys.customer(customerId), keys.product(productId)]);
  const customer = found.get(keyId(keys.customer(customerId)));
  const product = found.get(keyId(keys.product(productId)));
  return {
    ...(customer ? { customer: customerRecord(customer) } : {}),
    ...(product ? { product: record<ProductRecord>(product) } : {}),
  };
}
