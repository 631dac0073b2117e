import { CustomerTaken, access as customersAccess, insertCustomer } from '../data/customers.ts';
import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { outboxWrites } from '../data/outbox.ts';
import type { CustomerRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { CreateCustomerBody, SubscriptionCustomer } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { takenIssue } from './customer-lookup.ts';
import { organizationFor } from './organizations.ts';
import { presentCustomer } from './presenters.ts';

/**
 * Creates an individual customer in one of the caller's organizations. E-mail (case-insensitively)
 * and external id are unique within the organization, enforced by guard items written in the
 * customer's own transaction (with its list entries): of concurrent creates with one e-mail exactly
 * one succeeds, the others are the contract's 422. Its `customer.created` event is written in the
 * same transaction (the outbox).
 */
export async function createCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  body: CreateCustomerBody,
): Promise<SubscriptionCustomer> {
  const customer = await createCustomerIn(deps, organizationFor(principal, body.organization_id), body);
  countBusinessEvent('CustomersCreated');
  return presentCustomer(customer);
}

/** A new individual customer of an organization (the API, and the operator CLI that seeds the demo). */
export async function createCustomerIn(
  deps: Pick<Dependencies, 'table' | 'now'>,
  organizationId: string,
  body: Omit<CreateCustomerBody, 'organization_id'>,
): Promise<CustomerRecord> {
  const customer: CustomerRecord = {
    id: newId(),
    organization_id: organizationId,
    created_at: deps.now().toISOString(),
    modified_at: null,
    metadata: (body.metadata ?? {}) as CustomerRecord['metadata'],
    external_id: body.external_id ?? null,
    email: body.email,
    email_verified: false,
    type: 'individual',
    name: body.name ?? null,
    billing_name: null,
    billing_address: null,
    tax_id: null,
    locale: null,
    deleted_at: null,
    wallet_count: 0,
  };
  const events = outboxWrites(
    deps.table,
    { kind: 'customer', id: customer.id, organizationId: customer.organization_id },
    customer.created_at,
    [{ type: 'customer.created', data: presentCustomer(customer) }],
    newId,
  );
  try {
    await insertCustomer(deps.table, customer, events);
  } catch (error) {
    if (!(error instanceof CustomerTaken)) throw error;
    throw new PolarRequestValidationError([takenIssue(error.field, body[error.field])]);
  }
  return customer;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createCustomer: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...customersAccess.insertCustomer,
    ],
  },
});
