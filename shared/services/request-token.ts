/**
 * The token endpoint (RFC 6749 §3.2): the `authorization_code` grant with PKCE (RFC 7636 §4.5) and
 * the `refresh_token` grant with rotation and replay detection (RFC 9700 §4.14.2). The client has
 * already authenticated by its registered method (shared/http/client-auth.ts).
 *
 * A code or refresh token that is unknown, expired, spent, or another client's is `invalid_grant`
 * and changes nothing, with two deliberate exceptions that bound guessing: a code presented with the
 * wrong PKCE verifier is spent (one guess per code), and a refresh token already replaced by a
 * rotation revokes its whole family (the replay means it was stolen, or the client was).
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as oauthClientsAccess } from '../data/oauth-clients.ts';
import {
  burnAuthorizationCode,
  findAuthorizationCode,
  findStoredToken,
  IssuanceRefused,
  type IssuedTokens,
  access as oauthGrantsAccess,
  redeemAuthorizationCode,
  revokeGrant,
  rotateRefreshToken,
} from '../data/oauth-grants.ts';
import type { OAuthAccessTokenRecord, OAuthGrantRecord, OAuthSubject } from '../data/records.ts';
import { InvalidClient, OAuthError } from '../domain/errors.ts';
import {
  ACCESS_TOKEN_TTL_SECONDS,
  GRANT_MAX_LIFETIME_SECONDS,
  GRANT_TYPES,
  type GrantType,
  REFRESH_TOKEN_TTL_SECONDS,
} from '../domain/oauth.ts';
import type { ClientPrincipal } from '../domain/principals.ts';
import { parseScope } from '../domain/scopes.ts';
import {
  accessTokenFor,
  generateSecret,
  hashSecret,
  hasSecretShape,
  secretPrefixes,
} from '../domain/secrets.ts';
import type { OAuth2TokenResponse, RequestTokenBody } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { idTokenFor } from './id-token-issuance.ts';

const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);
const missing = (name: string) => new OAuthError('invalid_request', `${name} is required.`);

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** BASE64URL(SHA256(verifier)) against the stored challenge, compared in constant time. */
function verifierMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const stored = Buffer.from(challenge);
  return computed.length === stored.length && timingSafeEqual(computed, stored);
}

const ACCESS_PREFIX = {
  user: secretPrefixes.userAccessToken,
  organization: secretPrefixes.organizationAccessToken,
} as const;
const REFRESH_PREFIX = {
  user: secretPrefixes.userRefreshToken,
  organization: secretPrefixes.organizationRefreshToken,
} as const;

const isRefreshToken = (token: string): boolean =>
  hasSecretShape(token, REFRESH_PREFIX.user) || hasSecretShape(token, REFRESH_PREFIX.organization);

const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString();

interface Minted extends IssuedTokens {
  accessToken: string;
  refreshToken?: string;
}

/** New tokens of a family: an access token, and a refresh token when the client registered the grant. */
function mint(
  client: ClientPrincipal,
  grantId: string,
  subject: OAuthSubject,
  scopes: { access: string; refresh: string },
  now: Date,
  grantExpiresAt: string,
): Minted {
  const base = {
    grant_expires_at: grantExpiresAt,
    grant_id: grantId,
    client_id: client.clientId,
    sub_type: subject.sub_type,
    user_id: subject.user_id,
    organization_ids: subject.organization_ids,
    created_at: now.toISOString(),
    revoked_at: null,
  };
  const accessToken = accessTokenFor(ACCESS_PREFIX[subject.sub_type], client.clientId, subject.user_id);
  const access: OAuthAccessTokenRecord = {
    ...base,
    kind: 'oauth_access_token',
    token_id: randomUUID(),
    scope: scopes.access,
    expires_at: later(now, ACCESS_TOKEN_TTL_SECONDS),
  };
  const minted: Minted = { accessToken, accessHash: hashSecret(accessToken), access };
  if (!(client.client.registration.grant_types as string[]).includes('refresh_token')) return minted;
  const refreshToken = generateSecret(REFRESH_PREFIX[subject.sub_type]);
  const refreshHash = hashSecret(refreshToken);
  return {
    ...minted,
    refreshToken,
    refreshHash,
    refresh: {
      ...base,
      kind: 'oauth_refresh_token',
      token_id: randomUUID(),
      scope: scopes.refresh,
      // Never past the grant's absolute end.
      expires_at: [later(now, REFRESH_TOKEN_TTL_SECONDS), grantExpiresAt].sort()[0] as string,
      rotated_at: null,
      access_token_hash: minted.accessHash,
      access_expires_at: access.expires_at,
    },
  };
}

function answer(minted: Minted, idToken?: string): OAuth2TokenResponse {
  countBusinessEvent('OAuthTokensIssued');
  return {
    access_token: minted.accessToken,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    ...(minted.refreshToken ? { refresh_token: minted.refreshToken } : {}),
    scope: minted.access.scope,
    ...(idToken ? { id_token: idToken } : {}),
  };
}

/** The refusals of an issuing transaction that lost a race: the code or token was spent meanwhile, or the client deleted. */
async function issuing(write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (!(error instanceof IssuanceRefused)) throw error;
    if (error.reason === 'client') throw new InvalidClient();
    throw invalidGrant('The grant was used at the same time by another request.');
  }
}

async function exchangeCode(
  deps: Dependencies,
  client: ClientPrincipal,
  form: RequestTokenBody,
): Promise<OAuth2TokenResponse> {
  if (form.code === undefined) throw missing('code');
  if (form.code_verifier === undefined) throw missing('code_verifier (PKCE is required)');
  // One answer for every code that does not qualify: another client's is not confirmed to exist.
  const unusable = () =>
    invalidGrant('The code is invalid, expired or used, or was not issued to this client and redirect URI.');
  if (!hasSecretShape(form.code, secretPrefixes.authorizationCode)) throw unusable();
  const codeHash = hashSecret(form.code);
  const code = await findAuthorizationCode(deps.table, codeHash);
  const now = deps.now();
  if (!code || Date.parse(code.expires_at) <= now.getTime() || code.client_id !== client.clientId) {
    throw unusable();
  }
  // RFC 6749 §4.1.3: required when the authorization request named it; identical whenever sent.
  const named = code.redirect_uri_given || form.redirect_uri !== undefined;
  if (named && form.redirect_uri !== code.redirect_uri) throw unusable();
  if (!verifierMatches(form.code_verifier, code.code_challenge)) {
    await burnAuthorizationCode(deps.table, codeHash);
    throw invalidGrant('The code_verifier does not match the code_challenge; the code is spent.');
  }

  const subject: OAuthSubject = {
    sub_type: code.sub_type,
    user_id: code.user_id,
    organization_ids: code.organization_ids,
  };
  const grantId = randomUUID();
  const grantExpiresAt = later(now, GRANT_MAX_LIFETIME_SECONDS);
  const minted = mint(
    client,
    grantId,
    subject,
    { access: code.scope, refresh: code.scope },
    now,
    grantExpiresAt,
  );
  const grant: OAuthGrantRecord = {
    ...subject,
    grant_id: grantId,
    client_id: client.clientId,
    scope: code.scope,
    created_at: now.toISOString(),
    access_token_hash: minted.accessHash,
    access_expires_at: minted.access.expires_at,
    refresh_token_hash: minted.refreshHash ?? null,
    refresh_expires_at: minted.refresh?.expires_at ?? null,
    refreshed_at: null,
    rotations: 0,
    revoked_at: null,
    expires_at: grantExpiresAt,
  };
  // OpenID Connect: signed before the code is spent (shared/services/id-token-issuance.ts).
  const idToken = await idTokenFor(deps, client.clientId, code, minted.accessToken, now);
  await issuing(() => redeemAuthorizationCode(deps.table, codeHash, grant, minted));
  return answer(minted, idToken);
}

async function refresh(
  deps: Dependencies,
  client: ClientPrincipal,
  form: RequestTokenBody,
): Promise<OAuth2TokenResponse> {
  if (form.refresh_token === undefined) throw missing('refresh_token');
  if (!isRefreshToken(form.refresh_token)) throw invalidGrant('The refresh token is invalid.');
  const usedHash = hashSecret(form.refresh_token);
  const stored = await findStoredToken(deps.table, usedHash);
  const now = deps.now();
  if (stored?.kind !== 'oauth_refresh_token' || stored.client_id !== client.clientId) {
    throw invalidGrant('The refresh token is invalid.');
  }
  if (stored.revoked_at !== null) throw invalidGrant('The refresh token has been revoked.');
  // The grant's absolute lifetime (tokens of before it was recorded: counted from their own issue).
  const grantExpiresAt =
    stored.grant_expires_at ??
    new Date(Date.parse(stored.created_at) + GRANT_MAX_LIFETIME_SECONDS * 1000).toISOString();
  if (Date.parse(grantExpiresAt) <= now.getTime())
    throw invalidGrant('The grant reached its absolute lifetime; the user must authorize again.');
  if (Date.parse(stored.expires_at) <= now.getTime()) throw invalidGrant('The refresh token has expired.');
  if (stored.rotated_at !== null) {
    // A replaced refresh token used again: whoever holds it, the family can no longer be trusted.
    if (await revokeGrant(deps.table, stored.grant_id, now.toISOString())) {
      countBusinessEvent('OAuthTokenFamiliesRevoked');
    }
    throw invalidGrant('The refresh token was already used; every token of its grant is revoked.');
  }

  let accessScope = stored.scope;
  if (form.scope !== undefined) {
    const granted = parseScope(stored.scope).scopes;
    const asked = parseScope(form.scope).scopes;
    const beyond = asked.filter((scope) => !granted.includes(scope));
    if (asked.length === 0) throw new OAuthError('invalid_scope', 'scope names no scope.');
    if (beyond.length > 0) {
      throw new OAuthError('invalid_scope', `Not granted by the resource owner: ${beyond.join(' ')}.`);
    }
    accessScope = asked.join(' ');
  }
  const minted = mint(
    client,
    stored.grant_id,
    stored,
    { access: accessScope, refresh: stored.scope },
    now,
    grantExpiresAt,
  );
  const { refreshHash, refresh: next } = minted;
  if (!refreshHash || !next) throw new OAuthError('unauthorized_client', 'The client may not refresh.');
  await issuing(() =>
    rotateRefreshToken(
      deps.table,
      usedHash,
      stored,
      { ...minted, refreshHash, refresh: next },
      now.toISOString(),
    ),
  );
  return answer(minted);
}

export async function requestToken(
  deps: Dependencies,
  client: ClientPrincipal,
  form: RequestTokenBody,
): Promise<OAuth2TokenResponse> {
  const grantType = form.grant_type;
  if (grantType === undefined) throw missing('grant_type');
  if (!(GRANT_TYPES as readonly string[]).includes(grantType)) {
    throw new OAuthError('unsupported_grant_type', `The grant types are ${GRANT_TYPES.join(' and ')}.`);
  }
  if (!(client.client.registration.grant_types as string[]).includes(grantType)) {
    throw new OAuthError('unauthorized_client', `The client did not register the ${grantType} grant.`);
  }
  return (grantType as GrantType) === 'authorization_code'
    ? exchangeCode(deps, client, form)
    : refresh(deps, client, form);
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  requestToken: {
    table: [
      // Client authentication; the code or refresh token used; the family, when a replay revokes it.
      oneStatement(
        oauthClientsAccess.findOAuthClient,
        oauthGrantsAccess.findAuthorizationCode,
        oauthGrantsAccess.findStoredToken,
        oauthGrantsAccess.findGrant,
      ),
      ...oauthGrantsAccess.issueTokens,
    ],
  },
});
