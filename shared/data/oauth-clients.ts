import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { run, type Table } from './dynamo.ts';
import { item, type OAuthClientRecord } from './records.ts';
import { gsi1, keys } from './table.ts';

export async function insertOAuthClient(table: Table, client: OAuthClientRecord): Promise<void> {
  await run(() =>
    table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: item(
          {
            ...keys.oauthClient(client.client_id),
            ...gsi1.ownedBy(
              `USER#${client.created_by_user_id}`,
              'OAUTHCLIENT',
              client.created_at,
              client.client_id,
            ),
          },
          'oauth_client',
          client,
        ),
        ConditionExpression: 'attribute_not_exists(PK)',
      }),
    ),
  );
}
