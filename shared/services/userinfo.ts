/**
 * UserInfo (OpenID Connect Core §5.3): who the token acts for. A user: `sub` (their id) and, with the
 * `email` scope, the e-mail address (`email_verified` false: this service never verifies one). An
 * organization: `sub` (its id) and, with `profile`, its name.
 */
import { findUser, getOrganization } from '../data/organizations.ts';
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
