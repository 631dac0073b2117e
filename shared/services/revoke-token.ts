/**
 * Revocation (RFC 7009): a client ends one of its own tokens. An access token ends alone; a refresh
 * token ends its whole grant, the live access token with it (RFC 7009 §2.1: SHOULD). Anything else
 * (unknown, another client's, already ended, of another shape) is the same 200 and changes nothing:
 * the endpoint confirms no token, and a retry is harmless.
 */

import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as oauthClientsAccess } from '../data/oauth-clients.ts';
import { access as oauthGrantsAccess, revokeAccessToken, revokeGrant } from '../data/oauth-grants.ts';
import { OAuthError } from '../domain/errors.ts';
import type { ClientPrincipal } from '../domain/principals.ts';
import type { RevokeTokenBody } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { clientToken, isActive } from './oauth-token-lookup.ts';

export async function revokeToken(
  deps: Dependencies,
  client: ClientPrincipal,
  form: RevokeTokenBody,
): Promise<Record<string, never>> {
  if (form.token === undefined) throw new OAuthError('invalid_request', 'token is required.');
  const found = await clientToken(deps, client, form.token);
  const now = deps.now();
  if (found?.token.kind === 'oauth_refresh_token') {
    if (await revokeGrant(deps.table, found.token.grant_id, now.toISOString())) {
      countBusinessEvent('OAuthTokenFamiliesRevoked');
    }
  } else if (found && isActive(found.token, now)) {
    await revokeAccessToken(deps.table, found.hash, now.toISOString());
  }
  return {};
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  revokeToken: {
    table: [
      // The client, the token presented, and for a refresh token its grant.
      oneStatement(
        oauthClientsAccess.findOAuthClient,
        oauthGrantsAccess.findStoredToken,
        oauthGrantsAccess.findGrant,
      ),
      oneStatement(oauthGrantsAccess.revokeAccessToken, oauthGrantsAccess.revokeGrant),
    ],
  },
});
