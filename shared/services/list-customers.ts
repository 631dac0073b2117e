import { type CustomerSortField, access as customersAccess, listCustomerPage } from '../data/customers.ts';
import type { OperationAccess } from '../data/grants.ts';
import { parseListSorting } from '../data/listing.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { ListCustomersQuery, ListResourceCustomer } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { pageWindow, pagination, withinAnswerLimit } from './paging.ts';
import { presentCustomer } from './presenters.ts';
import { refuseUnsupported } from './unsupported-filters.ts';

/** Filters of the hosted service that no key of the customer list can answer. */
const UNSUPPORTED = {
  active: 'Filtering customers by active subscriptions is not supported.',
  metadata: 'Filtering customers by metadata is not supported.',
} as const;

/**
 * A page of the customers of the caller's organizations (or of those `organization_id` names among
 * them: another organization's id matches nothing), sorted as asked, ties by ascending id.
 */
export async function listCustomers(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListCustomersQuery,
): Promise<ListResourceCustomer> {
  refuseUnsupported(query, UNSUPPORTED);
  const requested = query.organization_id?.map(normalizeId);
  const organizations = requested
    ? principal.organizationIds.filter((id) => requested.includes(id))
    : principal.organizationIds;
  const window = pageWindow(query);
  const page = await listCustomerPage(
    deps.table,
    organizations,
    {
      ...(query.email !== undefined ? { email: query.email } : {}),
      ...(query.query !== undefined ? { query: query.query } : {}),
    },
    parseListSorting<CustomerSortField>(query.sorting, ['-created_at']),
    window.offset,
    window.limit,
  );
  return withinAnswerLimit({
    items: page.items.map(presentCustomer),
    pagination: pagination(page.total, window),
  });
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  listCustomers: {
    table: [...tokensAccess.findToken, ...tokensAccess.findAccessToken, ...customersAccess.listCustomerPage],
  },
});
