import { access as catalogAccess } from '../data/catalog.ts';
import { type CustomerState, CustomerTaken, access as customersAccess } from '../data/customers.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import type { AddressRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError, type ValidationIssue } from '../domain/errors.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type {
  AddressInput,
  SubscriptionCustomer,
  UpdateCustomerBody,
  UpdateCustomerExternalBody,
} from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { type CustomerLocator, changeCustomer, nextModifiedAt, takenIssue } from './customer-lookup.ts';
import { presentCustomer } from './presenters.ts';

const issue = (field: string, msg: string, input: unknown): ValidationIssue => ({
  loc: ['body', field],
  msg,
  type: 'value_error',
  input,
});

const address = (input: AddressInput): AddressRecord => ({
  line1: input.line1 ?? null,
  line2: input.line2 ?? null,
  postal_code: input.postal_code ?? null,
  city: input.city ?? null,
  state: input.state ?? null,
  country: input.country,
});

/**
 * The customer as the body would leave it, or the customer itself when nothing changes. Every rule
 * the body breaks is one detail item of the 422, as the hosted service words it.
 */
export function decideUpdate(before: CustomerState, body: UpdateCustomerBody, now: Date): CustomerState {
  const issues: ValidationIssue[] = [];
  const after: CustomerState = { ...before };
  if (body.email !== undefined) {
    after.email = body.email;
    // A new address is not verified; another spelling of the same one still is.
    if (body.email.toLowerCase() !== before.email?.toLowerCase()) after.email_verified = false;
  }
  if (body.name !== undefined) after.name = body.name;
  if (body.locale !== undefined) after.locale = body.locale;
  if (body.metadata !== undefined) after.metadata = body.metadata;
  if (body.billing_address !== undefined) {
    if (body.billing_address === null && before.billing_address !== null) {
      issues.push(
        issue('billing_address', 'Customer billing address cannot be reset to null once set.', null),
      );
    }
    after.billing_address = body.billing_address === null ? null : address(body.billing_address);
  }
  if (body.tax_id !== undefined && body.tax_id !== null) {
    issues.push(issue('tax_id', 'Tax IDs are not supported by this API.', body.tax_id));
  }
  if (body.external_id !== undefined) {
    if (before.external_id === null) after.external_id = body.external_id;
    else if (body.external_id !== before.external_id) {
      issues.push(issue('external_id', 'Customer external ID cannot be updated.', body.external_id));
    }
  }
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  if (JSON.stringify(after) === JSON.stringify(before)) return before;
  return { ...after, modified_at: nextModifiedAt(before, now) };
}

/**
 * Changes a live customer of the caller's organizations. The e-mail address's and external id's
 * uniqueness guards move in the customer's own transaction, so of concurrent changes to one address
 * exactly one succeeds. By external id, the body cannot name another external id (a field the
 * external-id operation does not have is ignored, as unknown fields are).
 */
export async function updateCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  locator: CustomerLocator,
  body: UpdateCustomerBody | UpdateCustomerExternalBody,
): Promise<SubscriptionCustomer> {
  const { external_id, type: _type, ...common } = body as UpdateCustomerBody;
  const changes: UpdateCustomerBody = 'externalId' in locator ? common : { ...common, external_id };
  try {
    const after = await changeCustomer(deps, principal, locator, 'customer.updated', (before, now) =>
      decideUpdate(before, changes, now),
    );
    return presentCustomer(after);
  } catch (error) {
    if (!(error instanceof CustomerTaken)) throw error;
    throw new PolarRequestValidationError([takenIssue(error.field, changes[error.field])]);
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  updateCustomer: {
    table: [
      oneStatement(tokensAccess.findToken, catalogAccess.getCustomer),
      ...tokensAccess.findAccessToken,
      ...customersAccess.writeCustomerChange,
    ],
  },
  updateCustomerExternal: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...customersAccess.findCustomersByExternalId,
      ...customersAccess.writeCustomerChange,
    ],
  },
});
