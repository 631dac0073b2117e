import type { OperationAccess } from '../data/grants.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { getCustomerWallet, access as walletsAccess } from '../data/wallets.ts';
import { InvalidToken, ResourceNotFound } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { CustomerPrincipal } from '../domain/principals.ts';
import type { CustomerWallet } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { presentWallet } from './presenters.ts';

/** One wallet of the session's customer; any other id, whoever owns it, is the same 404. */
export async function getWallet(
  deps: Dependencies,
  principal: CustomerPrincipal,
  id: string,
): Promise<CustomerWallet> {
  const { customer, wallet } = await getCustomerWallet(deps.table, principal.customerId, normalizeId(id));
  // A session outlives nothing: a deleted customer's token stops working, as for List Wallets.
  if (!customer || customer.deleted_at !== null || customer.organization_id !== principal.organizationId) {
    throw new InvalidToken();
  }
  if (!wallet) throw new ResourceNotFound();
  return presentWallet(wallet);
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getWallet: {
    table: [...tokensAccess.findToken, ...walletsAccess.getCustomerWallet],
  },
});
