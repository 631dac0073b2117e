import type { OperationAccess } from '../data/grants.ts';
import { access as markersAccess } from '../data/list-markers.ts';
import { type ListFilter, parseListSorting, TooManyMatches } from '../data/listing.ts';
import {
  listProductPage,
  type ProductFilter,
  type ProductSortField,
  access as productsAccess,
} from '../data/products.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { ListProductsQuery, ListResourceProduct } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { pageWindow, pagination, queryIssue, tooManyMatches, withinAnswerLimit } from './paging.ts';
import { presentProduct } from './presenters.ts';

/** A `query` prefix may match at most this many products of one organization (each is read). */
export const MAX_QUERY_MATCHES = 1000;

/** Hosted filters this API does not have (and `metadata[...]`): refused, never ignored (ignoring would answer wrong lists). */
const UNSUPPORTED_FILTERS = ['id', 'benefit_id', 'visibility'] as const;

/**
 * A page of the products of the caller's organizations, or of those named among them (another
 * organization contributes nothing, as an unknown one). `is_archived` and `is_recurring` read their
 * own views of the lists; `query` reads the name order's range of its prefix.
 */
export async function listProducts(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListProductsQuery,
): Promise<ListResourceProduct> {
  const refused = [
    ...UNSUPPORTED_FILTERS.filter((name) => (query[name] ?? []).length > 0).map((name) =>
      queryIssue(name, `Filtering products by ${name} is not supported by this API.`, query[name]),
    ),
    ...(Object.keys(query.metadata ?? {}).length > 0
      ? [
          queryIssue(
            'metadata',
            'Filtering products by metadata is not supported by this API.',
            query.metadata,
          ),
        ]
      : []),
  ];
  if (refused.length > 0) throw new PolarRequestValidationError(refused);
  const window = pageWindow(query);
  const { limit, offset } = window;
  const requested = query.organization_id?.map(normalizeId);
  const organizationIds = principal.organizationIds.filter((id) => !requested || requested.includes(id));
  const filter: ListFilter<ProductFilter> = {
    ...(typeof query.is_archived === 'boolean' ? { is_archived: String(query.is_archived) } : {}),
    ...(typeof query.is_recurring === 'boolean' ? { is_recurring: String(query.is_recurring) } : {}),
  };
  try {
    const page = await listProductPage(deps.table, {
      organizationIds,
      criteria: parseListSorting<ProductSortField>(query.sorting, ['-created_at']),
      filter,
      ...(query.query ? { namePrefix: { prefix: query.query, maxMatches: MAX_QUERY_MATCHES } } : {}),
      offset,
      limit,
    });
    return withinAnswerLimit({
      items: page.items.map(presentProduct),
      pagination: pagination(page.total, window),
    });
  } catch (error) {
    throw error instanceof TooManyMatches ? tooManyMatches('products', error.limit, query.query) : error;
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  listProducts: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...markersAccess.markedOrganizations,
      ...productsAccess.listProductPage,
    ],
  },
});
