/**
 * The authorization server's items: authorization codes, grants (token families), OAuth access and
 * refresh tokens, and the per-client liveness item. Every secret is stored only as its SHA-256 and
 * found by it; codes and tokens carry a TTL a day past their expiry.
 */
import {
  DeleteCommand,
  GetCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { ConditionFailed, ServiceUnavailable } from '../domain/errors.ts';
import { keyId, readMany } from './catalog.ts';
import { createOnly, putNew, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { owned } from './organizations.ts';
import {
  type AuthorizationCodeRecord,
  item,
  type OAuthAccessTokenRecord,
  type OAuthClientRecord,
  type OAuthGrantRecord,
  type OAuthRefreshTokenRecord,
  type OrganizationRecord,
  record,
  type StoredToken,
  type UserRecord,
} from './records.ts';
import { attr, gsi1, indexNames, keys, ownerKeys } from './table.ts';

/** Expired items linger a day (they still answer "expired"), then TTL removes them. */
export const ttlAfter = (expiresAt: string): Record<string, number> => ({
  [attr.ttl]: Math.floor(Date.parse(expiresAt) / 1000) + 86_400,
});

async function getConsistent<T>(table: Table, key: { PK: string; SK: string }): Promise<T | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: key, ConsistentRead: true })),
  );
  return result.Item ? record<T>(result.Item) : undefined;
}

export interface ConsentContext {
  client: OAuthClientRecord | undefined;
  user: UserRecord | undefined;
  /** The organizations found, in the order asked. */
  organizations: OrganizationRecord[];
}

/** What a consent screen shows, in one round trip: the client, the user and their organizations. */
export async function readConsentContext(
  table: Table,
  clientId: string | undefined,
  userId: string,
  organizationIds: readonly string[],
): Promise<ConsentContext> {
  const wanted = [
    ...(clientId ? [keys.oauthClient(clientId)] : []),
    keys.user(userId),
    ...organizationIds.map(keys.organization),
  ];
  const found = await readMany(table, wanted);
  const at = <T>(key: { PK: string; SK: string }): T | undefined => {
    const stored = found.get(keyId(key));
    return stored ? record<T>(stored) : undefined;
  };
  return {
    client: clientId ? at<OAuthClientRecord>(keys.oauthClient(clientId)) : undefined,
    user: at<UserRecord>(keys.user(userId)),
    organizations: organizationIds
      .map((id) => at<OrganizationRecord>(keys.organization(id)))
      .filter((organization): organization is OrganizationRecord => organization !== undefined),
  };
}

export async function insertAuthorizationCode(
  table: Table,
  codeHash: string,
  code: AuthorizationCodeRecord,
): Promise<void> {
  await putNew(
    table,
    item({ ...keys.authorizationCode(codeHash), ...ttlAfter(code.expires_at) }, 'authorization_code', code),
  );
}

export const findAuthorizationCode = (table: Table, codeHash: string) =>
  getConsistent<AuthorizationCodeRecord>(table, keys.authorizationCode(codeHash));

/** A code that failed its PKCE check is spent: one guess at the verifier per code. */
export async function burnAuthorizationCode(table: Table, codeHash: string): Promise<void> {
  await run(() =>
    table.doc.send(new DeleteCommand({ TableName: table.name, Key: keys.authorizationCode(codeHash) })),
  );
}

/** A token by its hash, read strongly consistent (a token revoked a moment ago is seen as revoked). */
export const findStoredToken = (table: Table, tokenHash: string) =>
  getConsistent<StoredToken>(table, keys.token(tokenHash));

export const findGrant = (table: Table, grantId: string) =>
  getConsistent<OAuthGrantRecord>(table, keys.oauthGrant(grantId));

/** The tokens one issuance writes: an access token, and a refresh token when the client may refresh. */
export interface IssuedTokens {
  accessHash: string;
  access: OAuthAccessTokenRecord;
  refreshHash?: string;
  refresh?: OAuthRefreshTokenRecord;
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const NULL = { ':null': null };

/**
 * What every issuance adds: the new tokens; a check that the client is still live (a delete racing
 * this write wins); and the client's liveness item, which authentication reads beside each access
 * token and Delete Client removes (written here, so that clients registered before it existed get
 * it with their first tokens).
 */
function issuance(table: Table, clientId: string, issued: IssuedTokens): TransactItem[] {
  const tokenItem = (hash: string, token: OAuthAccessTokenRecord | OAuthRefreshTokenRecord) =>
    createOnly(table, item({ ...keys.token(hash), ...ttlAfter(token.expires_at) }, 'token', token));
  return [
    { Put: tokenItem(issued.accessHash, issued.access) },
    ...(issued.refreshHash && issued.refresh ? [{ Put: tokenItem(issued.refreshHash, issued.refresh) }] : []),
    {
      ConditionCheck: {
        TableName: table.name,
        Key: keys.oauthClient(clientId),
        ConditionExpression: 'attribute_exists(PK) AND deleted_at = :null',
        ExpressionAttributeValues: NULL,
      },
    },
    {
      Put: {
        TableName: table.name,
        Item: { ...keys.oauthClientLive(clientId), entity: 'oauth_client_live', client_id: clientId },
      },
    },
  ];
}

/** Why an issuing transaction was refused: the code or token it spends was spent, or the client is gone. */
export class IssuanceRefused extends Error {
  constructor(readonly reason: 'spent' | 'client') {
    super(`issuance refused: ${reason}`);
  }
}

async function issue(table: Table, items: TransactItem[]): Promise<void> {
  try {
    await transact(table, items);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const clientCheck = items.findIndex((entry) => entry.ConditionCheck !== undefined);
    throw new IssuanceRefused(error.reasons[clientCheck] === 'ConditionalCheckFailed' ? 'client' : 'spent');
  }
}

/**
 * The code is spent and the family begins, in one transaction: of two exchanges of one code exactly
 * one succeeds, and a refused exchange writes nothing.
 */
export async function redeemAuthorizationCode(
  table: Table,
  codeHash: string,
  grant: OAuthGrantRecord,
  issued: IssuedTokens,
): Promise<void> {
  await issue(table, [
    {
      Delete: {
        TableName: table.name,
        Key: keys.authorizationCode(codeHash),
        ConditionExpression: 'attribute_exists(PK)',
      },
    },
    {
      Put: createOnly(
        table,
        item(
          {
            ...keys.oauthGrant(grant.grant_id),
            // Listed under its user (the applications they authorized), removed after its absolute end.
            ...gsi1.ownedBy(ownerKeys.user(grant.user_id), 'OAUTHGRANT', grant.created_at, grant.grant_id),
            ...(grant.expires_at ? ttlAfter(grant.expires_at) : {}),
          },
          'oauth_grant',
          grant,
        ),
      ),
    },
    ...issuance(table, grant.client_id, issued),
  ]);
}

/** Ends a token that may still be valid (one already expired is left to TTL, and may be gone). */
const endToken = (table: Table, hash: string, expiresAt: string, now: string): TransactItem[] =>
  now < expiresAt
    ? [
        {
          Update: {
            TableName: table.name,
            Key: keys.token(hash),
            UpdateExpression: 'SET revoked_at = :now',
            ConditionExpression: 'attribute_exists(PK)',
            ExpressionAttributeValues: { ':now': now },
          },
        },
      ]
    : [];

/**
 * Rotation (RFC 9700 §4.14.2): the refresh token used is marked rotated, the access token issued
 * with it ends, new ones are written and the family's record names them; conditioned on the token
 * still being the family's current one and the family live, so two refreshes with one token cannot
 * both succeed.
 */
export async function rotateRefreshToken(
  table: Table,
  usedHash: string,
  used: OAuthRefreshTokenRecord,
  issued: IssuedTokens & { refreshHash: string; refresh: OAuthRefreshTokenRecord },
  now: string,
): Promise<void> {
  await issue(table, [
    {
      Update: {
        TableName: table.name,
        Key: keys.token(usedHash),
        UpdateExpression: 'SET rotated_at = :now',
        ConditionExpression: 'attribute_exists(PK) AND rotated_at = :null AND revoked_at = :null',
        ExpressionAttributeValues: { ':now': now, ...NULL },
      },
    },
    {
      Update: {
        TableName: table.name,
        Key: keys.oauthGrant(used.grant_id),
        UpdateExpression:
          'SET access_token_hash = :access, access_expires_at = :accessExpires, refresh_token_hash = :refresh, refresh_expires_at = :refreshExpires, refreshed_at = :now, rotations = rotations + :one',
        ConditionExpression: 'refresh_token_hash = :used AND revoked_at = :null',
        ExpressionAttributeValues: {
          ':access': issued.accessHash,
          ':accessExpires': issued.access.expires_at,
          ':refresh': issued.refreshHash,
          ':refreshExpires': issued.refresh.expires_at,
          ':now': now,
          ':one': 1,
          ':used': usedHash,
          ...NULL,
        },
      },
    },
    ...endToken(table, used.access_token_hash, used.access_expires_at, now),
    ...issuance(table, used.client_id, issued),
  ]);
}

const GRANT_REVOCATION_ATTEMPTS = 3;

/**
 * Revokes a family: its record and the live access and refresh tokens it names, in one transaction
 * conditioned on those still being the family's tokens (a rotation in between: read again). Answers
 * whether this call revoked it (false: unknown or already revoked).
 */
export async function revokeGrant(table: Table, grantId: string, now: string): Promise<boolean> {
  for (let attempt = 0; attempt < GRANT_REVOCATION_ATTEMPTS; attempt++) {
    const grant = await findGrant(table, grantId);
    if (!grant || grant.revoked_at !== null) return false;
    const refresh = grant.refresh_token_hash;
    const refreshExpires = grant.refresh_expires_at;
    try {
      await transact(table, [
        {
          Update: {
            TableName: table.name,
            Key: keys.oauthGrant(grantId),
            UpdateExpression: 'SET revoked_at = :now',
            ConditionExpression:
              'revoked_at = :null AND access_token_hash = :access AND refresh_token_hash = :refresh',
            ExpressionAttributeValues: {
              ':now': now,
              ':access': grant.access_token_hash,
              ':refresh': refresh,
              ...NULL,
            },
          },
        },
        ...endToken(table, grant.access_token_hash, grant.access_expires_at, now),
        ...(refresh && refreshExpires ? endToken(table, refresh, refreshExpires, now) : []),
      ]);
      return true;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }
  throw new ServiceUnavailable();
}

/**
 * A user's grants, oldest first (GSI1 `USER#<user>` / `OAUTHGRANT#…`): what the user authorized.
 * Bounded by the grants of the last `GRANT_MAX_LIFETIME_SECONDS` (TTL removes older ones).
 */
export async function listUserGrants(table: Table, userId: string): Promise<OAuthGrantRecord[]> {
  return (await owned(table, ownerKeys.user(userId), 'OAUTHGRANT')).map((stored) =>
    record<OAuthGrantRecord>(stored),
  );
}

/** Clients by id, in one strongly consistent batch: those that exist (deleted ones included). */
export async function findClients(
  table: Table,
  clientIds: readonly string[],
): Promise<Map<string, OAuthClientRecord>> {
  const found = await readMany(
    table,
    clientIds.map((id) => keys.oauthClient(id)),
  );
  const clients = new Map<string, OAuthClientRecord>();
  for (const id of clientIds) {
    const stored = found.get(keyId(keys.oauthClient(id)));
    if (stored) clients.set(id, record<OAuthClientRecord>(stored));
  }
  return clients;
}

/** Ends one access token (RFC 7009); one already ended, or gone, stays as it is. */
export async function revokeAccessToken(table: Table, tokenHash: string, now: string): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.token(tokenHash),
          UpdateExpression: 'SET revoked_at = :now',
          ConditionExpression: 'attribute_exists(PK) AND revoked_at = :null',
          ExpressionAttributeValues: { ':now': now, ...NULL },
        }),
      ),
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/** IAM (shared/data/grants.ts); pure, so that no bundle keeps it (it reads an index name). */
export const access = /* @__PURE__ */ (() =>
  ({
    /** One batch: the client the request names, the user and their organizations (what the consent shows). */
    readConsentContext: [
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['oauthClient', 'user', 'organization'] },
    ],
    insertAuthorizationCode: [{ actions: ['dynamodb:PutItem'], leadingKeys: ['authorizationCode'] }],
    findAuthorizationCode: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['authorizationCode'] }],
    findStoredToken: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['token'] }],
    /** The family, when a replay revokes it. */
    findGrant: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['oauthGrant'] }],
    /**
     * One transaction per issuance (`redeemAuthorizationCode`, `rotateRefreshToken`): the code or old
     * refresh token spent, the family and its new tokens written, the client re-checked and its
     * liveness item written. A code that failed its PKCE check is deleted alone (`burnAuthorizationCode`).
     */
    issueTokens: [
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['authorizationCode'] },
      { actions: ['dynamodb:PutItem'], leadingKeys: ['oauthGrant', 'token', 'oauthClientLive'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['token', 'oauthGrant'] },
      { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['oauthClient'] },
    ],
    /** An access token ended alone (`revokeAccessToken`). */
    revokeAccessToken: [{ actions: ['dynamodb:UpdateItem'], leadingKeys: ['token'] }],
    /** A grant and its live tokens ended in one transaction (`revokeGrant`). */
    revokeGrant: [{ actions: ['dynamodb:UpdateItem'], leadingKeys: ['token', 'oauthGrant'] }],
    /** A user's grants, from GSI1 (`listUserGrants`). */
    listUserGrants: [{ actions: ['dynamodb:Query'], leadingKeys: ['user'], indexes: [indexNames.gsi1] }],
    /** The clients of those grants, in one batch (`findClients`). */
    findClients: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['oauthClient'] }],
  }) as const satisfies DataAccess)();
