import { getCustomer } from '../data/catalog.ts';
import { parseSorting, type SortingValue } from '../data/wallet-order.ts';
import { listWalletPage } from '../data/wallets.ts';
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
