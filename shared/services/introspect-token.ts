/**
 * Introspection (RFC 7662): a confidential client asks whether one of its own tokens is active, and
 * for what. Another client's token, an unknown one and an ended one are the same `{"active":false}`.
 */

import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as oauthClientsAccess } from '../data/oauth-clients.ts';
import { access as oauthGrantsAccess } from '../data/oauth-grants.ts';
import { OAuthError } from '../domain/errors.ts';
import type { ClientPrincipal } from '../domain/principals.ts';
import type { InactiveToken, IntrospectTokenBody, IntrospectTokenResponse } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { clientToken, isActive } from './oauth-token-lookup.ts';

const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);

export async function introspectToken(
  deps: Dependencies,
  client: ClientPrincipal,
  form: IntrospectTokenBody,
  { issuer }: { issuer: string },
): Promise<IntrospectTokenResponse | InactiveToken> {
  if (form.token === undefined) throw new OAuthError('invalid_request', 'token is required.');
  const found = await clientToken(deps, client, form.token);
  if (!found || !isActive(found.token, deps.now())) return { active: false };
  const { token } = found;
  return {
    active: true,
    client_id: token.client_id,
    token_type: token.kind === 'oauth_access_token' ? 'access_token' : 'refresh_token',
    scope: token.scope,
    sub_type: token.sub_type,
    sub: token.sub_type === 'user' ? token.user_id : (token.organization_ids[0] as string),
    organizations: token.organization_ids,
    aud: token.client_id,
    iss: issuer,
    exp: seconds(token.expires_at),
    iat: seconds(token.created_at),
  };
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  introspectToken: {
    table: [oneStatement(oauthClientsAccess.findOAuthClient, oauthGrantsAccess.findStoredToken)],
  },
});
