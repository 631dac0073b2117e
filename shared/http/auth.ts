/**
 * Bearer authentication per the contract's Credentials table: the token's
 * prefix says its kind, only its SHA-256 is looked up, and the lookup is the one
 * read authentication costs.
 */

import { timingSafeEqual } from 'node:crypto';
import { findOAuthClient } from '../data/oauth-clients.ts';
import { findToken } from '../data/tokens.ts';
import { InsufficientScope, InvalidToken, Unauthorized } from '../domain/errors.ts';
import type { BearerCredential, Principal } from '../domain/principals.ts';
import { grantedScopes, grants } from '../domain/scopes.ts';
import { hashSecret, hasSecretShape, secretPrefixes } from '../domain/secrets.ts';
import type { Dependencies } from '../runtime.ts';

const PREFIX: Record<BearerCredential, string> = {
  personal_access_token: secretPrefixes.personalAccessToken,
  customer_session: secretPrefixes.customerSession,
  registration_access_token: secretPrefixes.registrationAccessToken,
};

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

export async function authenticate(
  deps: Dependencies,
  authorization: string | undefined,
  accepts: BearerCredential,
  scopes: readonly string[],
  pathParameters: Record<string, string | undefined> = {},
): Promise<Principal> {
  const token = bearerToken(authorization);
  const expected = PREFIX[accepts];
  const wrongKind = Object.values(PREFIX).some((prefix) => prefix !== expected && token.startsWith(prefix));
  if (wrongKind) throw new Unauthorized();
  if (!hasSecretShape(token, expected)) throw new InvalidToken();
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
