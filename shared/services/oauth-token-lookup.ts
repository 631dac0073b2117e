/**
 * The token a client presents to the revocation and introspection endpoints: one of its own OAuth
 * access or refresh tokens, or nothing. A value of another shape is not looked up; a token of
 * another client is answered as an unknown one (RFC 7009 §2.1, RFC 7662 §2.2).
 */
import { findStoredToken } from '../data/oauth-grants.ts';
import type { OAuthAccessTokenRecord, OAuthRefreshTokenRecord } from '../data/records.ts';
import type { ClientPrincipal } from '../domain/principals.ts';
import { clientIdOfAccessToken, hashSecret, hasSecretShape, secretPrefixes } from '../domain/secrets.ts';
import type { Dependencies } from '../runtime.ts';

const ACCESS_PREFIXES = [secretPrefixes.userAccessToken, secretPrefixes.organizationAccessToken];
const REFRESH_PREFIXES = [secretPrefixes.userRefreshToken, secretPrefixes.organizationRefreshToken];

const hasOAuthShape = (token: string): boolean =>
  ACCESS_PREFIXES.some((prefix) => clientIdOfAccessToken(token, prefix) !== undefined) ||
  REFRESH_PREFIXES.some((prefix) => hasSecretShape(token, prefix));

export interface ClientToken {
  hash: string;
  token: OAuthAccessTokenRecord | OAuthRefreshTokenRecord;
}

export async function clientToken(
  deps: Dependencies,
  client: ClientPrincipal,
  presented: string,
): Promise<ClientToken | undefined> {
  if (!hasOAuthShape(presented)) return undefined;
  const hash = hashSecret(presented);
  const token = await findStoredToken(deps.table, hash);
  if (token?.kind !== 'oauth_access_token' && token?.kind !== 'oauth_refresh_token') return undefined;
  return token.client_id === client.clientId ? { hash, token } : undefined;
}

/** Live: not revoked, not expired, and for a refresh token not replaced by a rotation. */
export function isActive(token: ClientToken['token'], now: Date): boolean {
  if (token.revoked_at !== null || Date.parse(token.expires_at) <= now.getTime()) return false;
  return token.kind === 'oauth_access_token' || token.rotated_at === null;
}
