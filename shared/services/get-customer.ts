import { getCustomer as readCustomer } from '../data/catalog.ts';
import { ResourceNotFound } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { SubscriptionCustomer } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { presentCustomer } from './presenters.ts';

/** A live customer of one of the caller's organizations; anything else is the same 404. */
export async function getCustomer(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<SubscriptionCustomer> {
  const customer = await readCustomer(deps.table, normalizeId(id));
  if (
    !customer ||
    customer.deleted_at !== null ||
    !principal.organizationIds.includes(customer.organization_id)
  ) {
    throw new ResourceNotFound();
  }
  return presentCustomer(customer);
}
