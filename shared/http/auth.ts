/**
 * Bearer authentication per the contract's Credentials table: the token's
 * prefix says its kind, only its SHA-256 is looked up, and the lookup is the one
 * read authentication costs. Where a personal access token is accepted, an OAuth
 * access token is too, by its scopes and for its subject.
 */

import { timingSafeEqual } from 'node:crypto';
import { findOAuthClient } from '../data/oauth-clients.ts';
import { findAccessToken, findToken } from '../data/tokens.ts';
import { InsufficientScope, InvalidToken, Unauthorized } from '../domain/errors.ts';
import type { BearerCredential, Principal, UserPrincipal } from '../domain/principals.ts';
import { grantedScopes, grants } from '../domain/scopes.ts';
import { accessTokenParts, hashSecret, hasSecretShape, secretPrefixes } from '../domain/secrets.ts';
import type { Dependencies } from '../runtime.ts';

const PREFIX: Record<BearerCredential, string> = {
  personal_access_token: secretPrefixes.personalAccessToken,
  customer_session: secretPrefixes.customerSession,
  registration_access_token: secretPrefixes.registrationAccessToken,
};

/** OAuth access tokens stand for a user wherever a personal access token does (unless an operation says not). */
const OAUTH_ACCESS_PREFIXES: readonly string[] = [
  secretPrefixes.userAccessToken,
  secretPrefixes.organizationAccessToken,
];

/** Every bearer prefix this API issues, for telling a token of another kind from garbage. */
const BEARER_PREFIXES = [...Object.values(PREFIX), ...OAUTH_ACCESS_PREFIXES];

/** Extracts the bearer credential; a missing header, another scheme or an empty bearer is 401 Unauthorized. */
export function bearerToken(authorization: string | undefined): string {
  const match = authorization?.match(/^\s*Bearer(?:\s+([\s\S]*))?$/i);
  const token = match?.[1]?.trim();
  if (!token) throw new Unauthorized();
  return token;
}

/** Equal hex digests, compared in constant time. */
function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * RFC 7592: a registration access token is valid only for the client the path names. The client is
 * read by its id (one strongly consistent read) and the token's hash compared with the stored one;
 * an unknown client, a deleted one and another client's token are the same 401 (RFC 7592 §2.1).
 */
async function authenticateRegistration(
  deps: Dependencies,
  token: string,
  clientId: string | undefined,
): Promise<Principal> {
  if (!clientId || !hasSecretShape(clientId, secretPrefixes.clientId)) throw new InvalidToken();
  const client = await findOAuthClient(deps.table, clientId);
  const stored = client?.registration_token_hash;
  const tokenHash = hashSecret(token);
  if (!client || !stored || client.deleted_at || !sameHash(stored, tokenHash)) throw new InvalidToken();
  return { kind: 'client_registration', clientId, client, tokenHash };
}

/**
 * An OAuth access token (`polar_at_u_` / `polar_at_o_`), read with its client's liveness item in one
 * strongly consistent BatchGetItem: the token names its client, so a deleted client's tokens (whose
 * liveness item Delete Client removed) fail at once, at no extra round trip.
 */
async function authenticateOAuthAccessToken(
  deps: Dependencies,
  token: string,
  scopes: readonly string[],
): Promise<UserPrincipal> {
  const prefix = OAUTH_ACCESS_PREFIXES.find((candidate) => token.startsWith(candidate)) as string;
  const parts = accessTokenParts(token, prefix);
  if (!parts) throw new InvalidToken();
  const { clientId, userId } = parts;
  const {
    token: stored,
    clientLive,
    organizations,
  } = await findAccessToken(deps.table, hashSecret(token), clientId, userId);
  if (
    stored?.kind !== 'oauth_access_token' ||
    stored.client_id !== clientId ||
    !clientLive ||
    stored.user_id !== userId ||
    organizations === undefined
  ) {
    throw new InvalidToken();
  }
  if (stored.revoked_at !== null) throw new InvalidToken('The access token has been revoked.');
  if (Date.parse(stored.expires_at) <= deps.now().getTime())
    throw new InvalidToken('The access token has expired.');
  // The consent's organizations the user still belongs to: a removed membership ends here at once,
  // and a token acting for an organization the user has left acts for nobody.
  const organizationIds = stored.organization_ids.filter((id) => organizations.has(id));
  if (stored.sub_type === 'organization' && organizationIds.length === 0)
    throw new InvalidToken('The user is no longer a member of the organization the token acts for.');
  const granted = grantedScopes(stored.scope);
  if (!grants(granted, scopes)) throw new InsufficientScope(scopes);
  return {
    kind: 'user',
    userId: stored.user_id,
    tokenId: stored.token_id,
    organizationIds,
    scopes: granted,
    oauth: { clientId, subType: stored.sub_type },
  };
}

export async function authenticate(
  deps: Dependencies,
  authorization: string | undefined,
  accepts: BearerCredential,
  scopes: readonly string[],
  pathParameters: Record<string, string | undefined> = {},
  { oauthAccessTokens = true }: { oauthAccessTokens?: boolean } = {},
): Promise<Principal> {
  const token = bearerToken(authorization);
  const expected = [
    PREFIX[accepts],
    ...(accepts === 'personal_access_token' && oauthAccessTokens ? OAUTH_ACCESS_PREFIXES : []),
  ];
  const matched = BEARER_PREFIXES.find((prefix) => token.startsWith(prefix));
  if (matched !== undefined && !expected.includes(matched)) throw new Unauthorized();
  if (matched !== undefined && OAUTH_ACCESS_PREFIXES.includes(matched)) {
    return authenticateOAuthAccessToken(deps, token, scopes);
  }
  if (!hasSecretShape(token, PREFIX[accepts])) throw new InvalidToken();
  if (accepts === 'registration_access_token') {
    return authenticateRegistration(deps, token, pathParameters.client_id);
  }

  const stored = await findToken(deps.table, hashSecret(token));
  if (!stored || stored.kind !== accepts) throw new InvalidToken();
  if (stored.revoked_at !== null) throw new InvalidToken('The access token has been revoked.');
  if (stored.expires_at !== null && Date.parse(stored.expires_at) <= deps.now().getTime()) {
    throw new InvalidToken('The access token has expired.');
  }
  const granted = grantedScopes(stored.scope);
  if (!grants(granted, scopes)) throw new InsufficientScope(scopes);

  return stored.kind === 'personal_access_token'
    ? {
        kind: 'user',
        userId: stored.user_id,
        tokenId: stored.token_id,
        organizationIds: stored.organization_ids,
        scopes: granted,
      }
    : {
        kind: 'customer',
        customerId: stored.customer_id,
        organizationId: stored.organization_id,
        tokenId: stored.token_id,
        scopes: granted,
      };
}
