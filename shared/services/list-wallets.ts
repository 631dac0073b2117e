import { access as catalogAccess, getCustomer } from '../data/catalog.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { parseSorting, type SortingValue } from '../data/wallet-order.ts';
import { listWalletPage, access as walletsAccess } from '../data/wallets.ts';
import { InvalidToken } from '../domain/errors.ts';
import type { CustomerPrincipal } from '../domain/principals.ts';
import type { ListResourceCustomerWallet, ListWalletsQuery } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { pageWindow, pagination } from './paging.ts';
import { presentWallet } from './presenters.ts';

/**
 * A page of the session customer's wallets. The total comes from the count kept
 * on the customer item; a page past the end costs no query at all.
 */
export async function listWallets(
  deps: Dependencies,
  principal: CustomerPrincipal,
  query: ListWalletsQuery,
): Promise<ListResourceCustomerWallet> {
  const window = pageWindow(query);
  const customer = await getCustomer(deps.table, principal.customerId);
  if (!customer || customer.deleted_at !== null || customer.organization_id !== principal.organizationId) {
    throw new InvalidToken();
  }
  const total = customer.wallet_count ?? 0;
  const wallets =
    window.offset < total
      ? await listWalletPage(
          deps.table,
          customer.id,
          parseSorting(query.sorting as SortingValue[] | null | undefined),
          window.offset,
          window.limit,
        )
      : [];
  return { items: wallets.map(presentWallet), pagination: pagination(total, window) };
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  listWallets: {
    table: [oneStatement(tokensAccess.findToken, catalogAccess.getCustomer), ...walletsAccess.listWalletPage],
  },
});
