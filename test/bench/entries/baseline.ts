/**
 * The cold-start floor: a function that only constructs the DynamoDB document client (with the
 * same options as shared/data/dynamo.ts) and, when invoked, makes one GetItem: what every one of
 * our functions must do at least (authentication is one GetItem).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ maxAttempts: 3 }), {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  unmarshallOptions: { wrapNumbers: false },
});
const TableName = process.env.TABLE_NAME as string;

export const handler = async () => {
  const { Item } = await doc.send(
    new GetCommand({ TableName, Key: { PK: 'TOKEN#floor', SK: 'TOKEN#floor' } }),
  );
  return { statusCode: 200, body: JSON.stringify({ found: Item !== undefined }) };
};
