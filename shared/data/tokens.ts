import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { keyId, readMany } from './catalog.ts';
import { createOnly, putNew, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { owned, userOrganizations } from './organizations.ts';
import {
  type CustomerSessionRecord,
  item,
  type PersonalAccessTokenRecord,
  record,
  type StoredToken,
  type TokenRecord,
} from './records.ts';
import { attr, gsi1, keys, ownerKeys } from './table.ts';

/**
 * One read: the token item carries everything authentication needs. Strongly consistent, so that a
 * revocation or a removed membership (both written to this item) holds from the very next request.
 */
export async function findToken(table: Table, tokenHash: string): Promise<TokenRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.token(tokenHash), ConsistentRead: true }),
    ),
  );
  return result.Item ? record<TokenRecord>(result.Item) : undefined;
}

/**
 * An OAuth access token, its client's liveness item and its user's item, in one strongly consistent
 * round trip: the item Delete Client removes decides, at once, whether the client's tokens still
 * work, and the user item's set of organizations (kept by the membership's own transactions) which
 * of the token's organizations it still reaches. `organizations` is undefined when the token named
 * no user (a shape no issued token has).
 */
export async function findAccessToken(
  table: Table,
  tokenHash: string,
  clientId: string,
  userId: string | undefined,
): Promise<{
  token: StoredToken | undefined;
  clientLive: boolean;
  organizations: ReadonlySet<string> | undefined;
}> {
  const tokenKey = keys.token(tokenHash);
  const liveKey = keys.oauthClientLive(clientId);
  const userKey = userId === undefined ? undefined : keys.user(userId);
  const found = await readMany(table, [tokenKey, liveKey, ...(userKey ? [userKey] : [])]);
  const stored = found.get(keyId(tokenKey));
  return {
    token: stored ? record<StoredToken>(stored) : undefined,
    clientLive: found.has(keyId(liveKey)),
    organizations: userKey ? userOrganizations(found.get(keyId(userKey))) : undefined,
  };
}

/** The stored item of a token: found by its hash, listed under its owner, removed by TTL when it expires. */
export function tokenItem(tokenHash: string, token: TokenRecord): Record<string, unknown> {
  const owner =
    token.kind === 'personal_access_token'
      ? ownerKeys.user(token.user_id)
      : ownerKeys.customer(token.customer_id);
  const ttl: Record<string, number> =
    token.kind === 'customer_session' && token.expires_at
      ? // Keep expired sessions a day so they still answer "expired", then let TTL remove them.
        { [attr.ttl]: Math.floor(Date.parse(token.expires_at) / 1000) + 86_400 }
      : {};
  return item(
    { ...keys.token(tokenHash), ...gsi1.ownedBy(owner, 'TOKEN', token.created_at, token.token_id), ...ttl },
    'token',
    token,
  );
}

export async function insertToken(table: Table, tokenHash: string, token: TokenRecord): Promise<void> {
  await putNew(table, tokenItem(tokenHash, token));
}

/**
 * A customer session, written only while its customer is live: the transaction re-checks the
 * customer (exists, not deleted, same organization), so a session cannot outlive a concurrent delete.
 */
export async function insertCustomerSession(
  table: Table,
  tokenHash: string,
  session: CustomerSessionRecord,
): Promise<void> {
  await transact(table, [
    { Put: createOnly(table, tokenItem(tokenHash, session)) },
    {
      ConditionCheck: {
        TableName: table.name,
        Key: keys.customer(session.customer_id),
        ConditionExpression:
          'attribute_exists(PK) AND deleted_at = :null AND organization_id = :organization',
        ExpressionAttributeValues: { ':null': null, ':organization': session.organization_id },
      },
    },
  ]);
}

/**
 * A user's personal access tokens, oldest first (GSI1 `USER#<user>` / `TOKEN#…`): the records only.
 * The item's key holds the token's hash; `record` strips it, so a listing never carries it.
 */
export async function listPersonalAccessTokens(
  table: Table,
  userId: string,
): Promise<PersonalAccessTokenRecord[]> {
  return (await owned(table, ownerKeys.user(userId), 'TOKEN'))
    .map((stored) => record<TokenRecord>(stored))
    .filter((token): token is PersonalAccessTokenRecord => token.kind === 'personal_access_token');
}

/**
 * Revokes one of a user's personal access tokens by its id: authentication (a strongly consistent
 * read of the token item) refuses it from the next request. Returns the token as revoked, `undefined` when the user has no such token, and the
 * token unchanged when it was already revoked.
 */
export async function revokePersonalAccessToken(
  table: Table,
  userId: string,
  tokenId: string,
  revokedAt: string,
): Promise<PersonalAccessTokenRecord | undefined> {
  const found = (await owned(table, ownerKeys.user(userId), 'TOKEN')).find(
    (stored) => stored.kind === 'personal_access_token' && stored.token_id === tokenId,
  );
  if (!found) return undefined;
  const token = record<PersonalAccessTokenRecord>(found);
  if (token.revoked_at !== null) return token;
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: { PK: found.PK as string, SK: found.SK as string },
          UpdateExpression: 'SET revoked_at = :at',
          ConditionExpression: 'attribute_exists(PK) AND revoked_at = :null',
          ExpressionAttributeValues: { ':at': revokedAt, ':null': null },
        }),
      ),
    );
  } catch (error) {
    if (error instanceof ConditionFailed) return token;
    throw error;
  }
  return { ...token, revoked_at: revokedAt };
}

// ---------------------------------------------------------------------------
// IAM: what the calls above need (shared/data/grants.ts).
// ---------------------------------------------------------------------------

export const access = {
  /** Authentication reads the token item on every request (`findToken`). */
  findToken: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['token'] }],
  /**
   * An OAuth access token is read with its client's liveness item and its user's item in one batch
   * (`findAccessToken`, shared/http/auth.ts): every operation that takes a personal access token
   * takes these tokens too.
   */
  findAccessToken: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['token', 'oauthClientLive', 'user'] },
  ],
  /** One transaction writes the session and re-checks that the customer is still live. */
  insertCustomerSession: [
    { actions: ['dynamodb:PutItem'], leadingKeys: ['token'] },
    { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['customer'] },
  ],
} as const satisfies DataAccess;
