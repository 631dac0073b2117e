import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { putNew, run, type Table } from './dynamo.ts';
import { item, record, type TokenRecord } from './records.ts';
import { attr, gsi1, keys, ownerKeys } from './table.ts';

/** One read: the token item carries everything authentication needs. */
export async function findToken(table: Table, tokenHash: string): Promise<TokenRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.token(tokenHash) })),
  );
  return result.Item ? record<TokenRecord>(result.Item) : undefined;
}

export async function insertToken(table: Table, tokenHash: string, token: TokenRecord): Promise<void> {
  const owner =
    token.kind === 'personal_access_token'
      ? ownerKeys.user(token.user_id)
      : ownerKeys.customer(token.customer_id);
  const ttl: Record<string, number> =
    token.kind === 'customer_session' && token.expires_at
      ? // Keep expired sessions a day so they still answer "expired", then let TTL remove them.
        { [attr.ttl]: Math.floor(Date.parse(token.expires_at) / 1000) + 86_400 }
      : {};
  await putNew(
    table,
    item(
      { ...keys.token(tokenHash), ...gsi1.ownedBy(owner, 'TOKEN', token.created_at, token.token_id), ...ttl },
      'token',
      token,
    ),
  );
}
