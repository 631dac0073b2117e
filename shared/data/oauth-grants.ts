/**
 * The authorization server's items: authorization codes, grants (token families), OAuth access and
 * refresh tokens, and the per-client liveness item. Every secret is stored only as its SHA-256 and
 * found by it; codes and tokens carry a TTL a day past their expiry.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keyId, readMany } from './catalog.ts';
import { putNew, run, type Table } from './dynamo.ts';
import {
  type AuthorizationCodeRecord,
  item,
  type OAuthClientRecord,
  type OrganizationRecord,
  record,
  type UserRecord,
} from './records.ts';
import { attr, keys } from './table.ts';

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
