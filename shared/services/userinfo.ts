/**
 * UserInfo (OpenID Connect Core §5.3): who the token acts for. A user: `sub` (their id) and, with the
 * `email` scope, the e-mail address (`email_verified` false: this service never verifies one). An
 * organization: `sub` (its id) and, with `profile`, its name.
 */

import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { findUser, getOrganization, access as organizationsAccess } from '../data/organizations.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { UserInfoOrganization, UserInfoUser } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';

export async function userinfo(
  deps: Dependencies,
  principal: UserPrincipal,
): Promise<UserInfoUser | UserInfoOrganization> {
  if (principal.oauth?.subType === 'organization') {
    const organizationId = principal.organizationIds[0] as string;
    const organization = principal.scopes.has('profile')
      ? await getOrganization(deps.table, organizationId)
      : undefined;
    return { sub: organizationId, ...(organization ? { name: organization.name } : {}) };
  }
  const user = principal.scopes.has('email') ? await findUser(deps.table, principal.userId) : undefined;
  return { sub: principal.userId, ...(user ? { email: user.email, email_verified: false } : {}) };
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  userinfo: {
    table: [
      // The token; then the user (email) or, for a token acting for an organization, the organization.
      oneStatement(tokensAccess.findToken, organizationsAccess.findUser, organizationsAccess.getOrganization),
      ...tokensAccess.findAccessToken,
    ],
  },
});
