import { access as catalogAccess } from '../data/catalog.ts';
import type { CustomerState } from '../data/customers.ts';
import { access as customersAccess } from '../data/customers.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { Dependencies } from '../runtime.ts';
import { type CustomerLocator, changeCustomer, nextModifiedAt } from './customer-lookup.ts';

/** Where an anonymized customer's e-mail address points: nowhere (RFC 2606 reserves `.invalid`). */
export const ANONYMIZED_DOMAIN = 'anonymized.invalid';

/**
 * The customer as deleted: `deleted_at` set and the external id cleared (it can name a new customer at
 * once). Anonymized, nothing personal is left: the e-mail address becomes one made of the customer's
 * own id (neither the address nor a hash of it, which could be matched against a list of addresses),
 * and name, billing details, locale and metadata are cleared.
 */
export function deletedCustomer(before: CustomerState, now: Date, anonymize: boolean): CustomerState {
  const at = nextModifiedAt(before, now);
  const deleted: CustomerState = { ...before, deleted_at: at, modified_at: at, external_id: null };
  if (!anonymize) return deleted;
  return {
    ...deleted,
    email: `${before.id}@${ANONYMIZED_DOMAIN}`,
    email_verified: false,
    name: null,
    billing_name: null,
    billing_address: null,
    tax_id: null,
    locale: null,
    metadata: {},
  };
}

/**
 * Soft-deletes a live customer of the caller's organizations in one transaction: the item, both
 * uniqueness guards (freed at once), its list entries and count, and its `customer.deleted` event. Of concurrent deletes exactly one
 * succeeds; the others find it deleted (404). Its sessions stop working at once because every
 * customer-portal operation reads the customer; its subscriptions are left as they are.
 */
export async function deleteCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  locator: CustomerLocator,
  anonymize: boolean,
): Promise<void> {
  await changeCustomer(deps, principal, locator, 'customer.deleted', (before, now) =>
    deletedCustomer(before, now, anonymize),
  );
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  deleteCustomer: {
    table: [
      oneStatement(tokensAccess.findToken, catalogAccess.getCustomer),
      ...tokensAccess.findAccessToken,
      ...customersAccess.writeCustomerDeletion,
    ],
  },
  deleteCustomerExternal: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...customersAccess.findCustomersByExternalId,
      ...customersAccess.writeCustomerDeletion,
    ],
  },
});
