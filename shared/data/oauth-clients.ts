import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed, InvalidToken } from '../domain/errors.ts';
import { putNew, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { item, type OAuthClientRecord, record } from './records.ts';
import { gsi1, keys, ownerKeys } from './table.ts';

export async function insertOAuthClient(table: Table, client: OAuthClientRecord): Promise<void> {
  const owner = ownerKeys.user(client.created_by_user_id);
  await putNew(
    table,
    item(
      {
        ...keys.oauthClient(client.client_id),
        ...gsi1.ownedBy(owner, 'OAUTHCLIENT', client.created_at, client.client_id),
      },
      'oauth_client',
      client,
    ),
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
  clientId: string,
  tokenHash: string,
  now: string,
): Promise<void> {
  try {
    await transact(table, [
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

/** IAM (shared/data/grants.ts). */
export const access = {
  insertOAuthClient: [{ actions: ['dynamodb:PutItem'], leadingKeys: ['oauthClient'] }],
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
  ],
} as const satisfies DataAccess;
