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
