import { access as catalogAccess, getProduct as readProduct } from '../data/catalog.ts';
import type { OperationAccess } from '../data/grants.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { ResourceNotFound } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { Product } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { presentProduct } from './presenters.ts';

/** A product of one of the caller's organizations; anything else is the same 404. */
export async function getProduct(deps: Dependencies, principal: UserPrincipal, id: string): Promise<Product> {
  const product = await readProduct(deps.table, normalizeId(id));
  if (
    !product ||
    product.deleted_at !== null ||
    !principal.organizationIds.includes(product.organization_id)
  ) {
    throw new ResourceNotFound();
  }
  return presentProduct(product);
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getProduct: {
    table: [...tokensAccess.findToken, ...tokensAccess.findAccessToken, ...catalogAccess.getProduct],
  },
});
