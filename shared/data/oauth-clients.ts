import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed, InvalidToken } from '../domain/errors.ts';
import { type CapWrite, access as capsAccess, transactClaiming, transactReleasing } from './caps.ts';
import { createOnly, run, type Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { item, type OAuthClientRecord, record } from './records.ts';
import { gsi1, indexNames, keys, ownerKeys } from './table.ts';

/**
 * The user's live clients, for the cap's counter when it does not exist yet: a count over the
 * user's clients in GSI1 (deleted ones stay there, and are filtered out).
 */
async function liveClientCount(table: Table, userId: string): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          IndexName: indexNames.gsi1,
          KeyConditionExpression: 'GSI1PK = :owner AND begins_with(GSI1SK, :kind)',
          FilterExpression: 'attribute_not_exists(deleted_at) OR deleted_at = :null',
          ExpressionAttributeValues: {
            ':owner': ownerKeys.user(userId),
            ':kind': gsi1.ownerPrefix('OAUTHCLIENT'),
            ':null': null,
          },
          Select: 'COUNT',
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}

const clientCap = (table: Table, userId: string): CapWrite => ({
  cap: 'oauthClients',
  owner: userId,
  liveCount: () => liveClientCount(table, userId),
});

/**
 * The client and its registrant's cap counter up by one (`CAPS.oauthClients`), in one transaction:
 * at the cap it is refused with `LimitReached` in RFC 7591's error shape.
 */
export async function insertOAuthClient(table: Table, client: OAuthClientRecord): Promise<void> {
  const userId = client.created_by_user_id;
  const owner = ownerKeys.user(userId);
  await transactClaiming(
    table,
    clientCap(table, userId),
    [
      {
        Put: createOnly(
          table,
          item(
            {
              ...keys.oauthClient(client.client_id),
              ...gsi1.ownedBy(owner, 'OAUTHCLIENT', client.created_at, client.client_id),
            },
            'oauth_client',
            client,
          ),
        ),
      },
    ],
    'OAuth clients per user',
    { oauth: true },
  );
}

/** One strongly consistent read: a registration updated or deleted a moment ago is seen as such. */
export async function findOAuthClient(
  table: Table,
  clientId: string,
): Promise<OAuthClientRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.oauthClient(clientId), ConsistentRead: true }),
    ),
  );
  return result.Item ? record<OAuthClientRecord>(result.Item) : undefined;
}

/**
 * The condition of every RFC 7592 write: the client exists, is live, and the token that
 * authenticated the request is still its registration token. A delete between our read and this
 * write makes the write fail, as the token would have.
 */
const STILL_REGISTERED =
  'attribute_exists(PK) AND registration_token_hash = :token AND (attribute_not_exists(deleted_at) OR deleted_at = :null)';

export async function replaceOAuthClientRegistration(
  table: Table,
  clientId: string,
  tokenHash: string,
  registration: Record<string, unknown>,
  now: string,
): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.oauthClient(clientId),
          UpdateExpression: 'SET registration = :registration, modified_at = :now',
          ConditionExpression: STILL_REGISTERED,
          ExpressionAttributeValues: {
            ':registration': registration,
            ':now': now,
            ':token': tokenHash,
            ':null': null,
          },
        }),
      ),
    );
  } catch (error) {
    if (error instanceof ConditionFailed) throw new InvalidToken();
    throw error;
  }
}

/**
 * Soft delete: the client stays for audit, its registration token hash is removed (the token stops
 * working in the same write) and its liveness item is deleted, so every access token issued to it
 * is refused from the next request on. One transaction: of concurrent deletes exactly one succeeds;
 * an SDK retry of the successful one (its answer lost) is the same transaction again, which
 * DynamoDB recognises by its client request token.
 */
export async function deleteOAuthClient(
  table: Table,
  client: Pick<OAuthClientRecord, 'client_id' | 'created_by_user_id'>,
  tokenHash: string,
  now: string,
): Promise<void> {
  const clientId = client.client_id;
  try {
    await transactReleasing(table, clientCap(table, client.created_by_user_id), [
      {
        Update: {
          TableName: table.name,
          Key: keys.oauthClient(clientId),
          UpdateExpression:
            'SET deleted_at = :now, modified_at = :now, deletion_id = :deletion REMOVE registration_token_hash',
          ConditionExpression: STILL_REGISTERED,
          ExpressionAttributeValues: {
            ':now': now,
            ':deletion': randomUUID(),
            ':token': tokenHash,
            ':null': null,
          },
        },
      },
      { Delete: { TableName: table.name, Key: keys.oauthClientLive(clientId) } },
    ]);
  } catch (error) {
    if (error instanceof ConditionFailed) throw new InvalidToken();
    throw error;
  }
}

/**
 * IAM (shared/data/grants.ts). Built by a pure call: it spreads the cap counter's grant, and a
 * spread would otherwise keep the declarations in every bundle that imports this module.
 */
export const access = /* @__PURE__ */ (() =>
  ({
    /** The client and the registrant's cap counter (seeded, when missing, from their clients in GSI1). */
    insertOAuthClient: [
      { actions: ['dynamodb:PutItem'], leadingKeys: ['oauthClient'] },
      ...capsAccess.capCounter,
      { actions: ['dynamodb:Query'], leadingKeys: ['user'], indexes: [indexNames.gsi1] },
    ],
    /** Also how client authentication and the registration token (RFC 7592) read the client. */
    findOAuthClient: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['oauthClient'] }],
    /**
     * The client read (strongly consistent, with the registration token's check) and updated: one
     * statement.
     */
    replaceOAuthClientRegistration: [
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['oauthClient'] },
    ],
    /** One transaction: the client soft-deleted and its liveness item removed (its tokens stop at once). */
    deleteOAuthClient: [
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['oauthClient'] },
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['oauthClientLive'] },
      ...capsAccess.capCounter,
      { actions: ['dynamodb:Query'], leadingKeys: ['user'], indexes: [indexNames.gsi1] },
    ],
  }) as const satisfies DataAccess)();
