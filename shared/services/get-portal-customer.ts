import { access as catalogAccess, getCustomer } from '../data/catalog.ts';
import type { OperationAccess } from '../data/grants.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { InvalidToken } from '../domain/errors.ts';
import type { CustomerPrincipal } from '../domain/principals.ts';
import type { CustomerPortalCustomer } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';

/**
 * The session's customer as the portal shows it (the hosted service's `GET
 * /v1/customer-portal/customers/me`): no metadata, external id or organization; no OAuth accounts or
 * payment methods here. A session outlives nothing: a deleted customer's token stops working, as in
 * the portal's other operations.
 */
export async function getPortalCustomer(
  deps: Dependencies,
  principal: CustomerPrincipal,
): Promise<CustomerPortalCustomer> {
  const customer = await getCustomer(deps.table, principal.customerId);
  if (!customer || customer.deleted_at !== null || customer.organization_id !== principal.organizationId) {
    throw new InvalidToken();
  }
  return {
    id: customer.id,
    created_at: customer.created_at,
    modified_at: customer.modified_at,
    email: customer.email,
    email_verified: customer.email_verified,
    name: customer.name,
    billing_name: customer.billing_name,
    billing_address: customer.billing_address,
    tax_id: customer.tax_id,
    oauth_accounts: {},
    default_payment_method_id: null,
    type: customer.type,
    locale: customer.locale,
  } as CustomerPortalCustomer;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getPortalCustomer: {
    table: [...tokensAccess.findToken, ...catalogAccess.getCustomer],
  },
});
