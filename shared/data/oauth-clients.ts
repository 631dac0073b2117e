import { putNew, type Table } from './dynamo.ts';
import { item, type OAuthClientRecord } from './records.ts';
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
