/**
 * The ID Token of a code exchange (OpenID Connect Core §3.1.3.3): issued when the grant carries
 * `openid`, signed before the code is redeemed, so that a key store out of reach leaves the code
 * unspent (503; the client may retry). Refreshes answer no new ID Token (Core §12.2 allows it).
 */
import type { AuthorizationCodeRecord } from '../data/records.ts';
import { ServiceUnavailable } from '../domain/errors.ts';
import { accessTokenHash, signIdToken } from '../domain/id-token.ts';
import { parseScope } from '../domain/scopes.ts';
import { logError } from '../observability/telemetry.ts';
import { type Dependencies, issuerOf } from '../runtime.ts';

/** An ID Token lives as long as the access token it comes with. */
export const ID_TOKEN_TTL_SECONDS = 3600;

/** The subject UserInfo names too: the user, or the organization a token acts for. */
export const subjectOf = (
  code: Pick<AuthorizationCodeRecord, 'sub_type' | 'user_id' | 'organization_ids'>,
) => (code.sub_type === 'organization' ? (code.organization_ids[0] as string) : code.user_id);

export async function idTokenFor(
  deps: Dependencies,
  clientId: string,
  code: AuthorizationCodeRecord,
  accessToken: string,
  now: Date,
): Promise<string | undefined> {
  if (!parseScope(code.scope).scopes.includes('openid')) return undefined;
  const keys = deps.idTokenKeys;
  if (!keys) throw new Error('the token endpoint was given no ID Token keys');
  const iat = Math.floor(now.getTime() / 1000);
  const claims = {
    iss: issuerOf(deps),
    sub: subjectOf(code),
    aud: clientId,
    azp: clientId,
    exp: iat + ID_TOKEN_TTL_SECONDS,
    iat,
    auth_time: code.auth_time ?? Math.floor(Date.parse(code.created_at) / 1000),
    ...(code.nonce !== undefined ? { nonce: code.nonce } : {}),
    at_hash: accessTokenHash(accessToken),
  };
  try {
    return await signIdToken(keys, claims);
  } catch (error) {
    // KMS refused or was out of reach: logged by name and message only (never the token or claims).
    const { name, message } = error as Error;
    logError('ID Token signing failed', { name, message });
    throw new ServiceUnavailable();
  }
}
