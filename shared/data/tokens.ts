import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keyId, readMany } from './catalog.ts';
import { createOnly, putNew, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { type CustomerSessionRecord, item, record, type StoredToken, type TokenRecord } from './records.ts';
import { attr, gsi1, keys, ownerKeys } from './table.ts';

/** One read: the token item carries everything authentication needs. */
export async function findToken(table: Table, tokenHash: string): Promise<TokenRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.token(tokenHash) })),
  );
  return result.Item ? record<TokenRecord>(result.Item) : undefined;
}

/**
 * An OAuth access token and its client's liveness item, in one strongly consistent round trip: the
 * item Delete Client removes decides, at once, whether the client's tokens still work.
 */
export async function findAccessToken(
  table: Table,
  tokenHash: string,
  clientId: string,
): Promise<{ token: StoredToken | undefined; clientLive: boolean }> {
  const tokenKey = keys.token(tokenHash);
  const liveKey = keys.oauthClientLive(clientId);
  const found = await readMany(table, [tokenKey, liveKey]);
  const stored = found.get(keyId(tokenKey));
  return { token: stored ? record<StoredToken>(stored) : undefined, clientLive: found.has(keyId(liveKey)) };
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

// ---------------------------------------------------------------------------
// IAM: what the calls above need (shared/data/grants.ts).
// ---------------------------------------------------------------------------

export const access = {
  /** Authentication reads the token item on every request (`findToken`). */
  findToken: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['token'] }],
  /**
   * An OAuth access token is read with its client's liveness item in one batch (`findAccessToken`,
   * shared/http/auth.ts): every operation that takes a personal access token takes these tokens too.
   */
  findAccessToken: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['token', 'oauthClientLive'] }],
  /** One transaction writes the session and re-checks that the customer is still live. */
  insertCustomerSession: [
    { actions: ['dynamodb:PutItem'], leadingKeys: ['token'] },
    { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['customer'] },
  ],
} as const satisfies DataAccess;
