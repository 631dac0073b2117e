import { access as catalogAccess } from '../data/catalog.ts';
import { access as customersAccess } from '../data/customers.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { SubscriptionCustomer } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { type CustomerLocator, findLiveCustomer } from './customer-lookup.ts';
import { presentCustomer } from './presenters.ts';

/**
 * A live customer of one of the caller's organizations, by id or by external id; anything else is
 * the same 404 (and an external id naming customers in several of the caller's organizations a 409).
 */
export async function getCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  locator: CustomerLocator,
): Promise<SubscriptionCustomer> {
  return presentCustomer(await findLiveCustomer(deps, principal, locator));
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getCustomer: {
    table: [...tokensAccess.findAccessToken, oneStatement(tokensAccess.findToken, catalogAccess.getCustomer)],
  },
  getCustomerExternal: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...customersAccess.findCustomersByExternalId,
    ],
  },
});
