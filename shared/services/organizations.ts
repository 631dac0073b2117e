import { PolarRequestValidationError } from '../domain/errors.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';

/**
 * The organization something new belongs to: the one named in the body (`organization_id`), which
 * must be one of the caller's, or else the caller's only one. A 422 at `body.organization_id`
 * otherwise, the same for an organization that does not exist and one of another tenant.
 */
export function organizationFor(principal: UserPrincipal, requested: string | null | undefined): string {
  const fail = (msg: string, input: unknown): never => {
    throw new PolarRequestValidationError([
      { loc: ['body', 'organization_id'], msg, type: 'value_error', input },
    ]);
  };
  if (requested) {
    const id = normalizeId(requested);
    return principal.organizationIds.includes(id) ? id : fail('Organization does not exist.', requested);
  }
  const [only, ...others] = principal.organizationIds;
  if (only === undefined) return fail('Organization does not exist.', null);
  if (others.length > 0)
    return fail('organization_id is required: you belong to several organizations.', null);
  return only;
}
