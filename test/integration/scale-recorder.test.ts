/**
 * The scale model's recorder (test/scale/recorder.ts) on the production document client against
 * DynamoDB Local: each kind of call priced by DynamoDB's rules, item by item, from the items as they
 * stood before and after. Where DynamoDB Local prices correctly (a single write on a table without
 * an index entry) its figure must agree; where it does not (transactions, index writes), ours is
 * the documented rule.
 */
import {
  DeleteCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { attr } from '#shared/data/table.ts';
import { itemSize } from '#test/scale/capacity.ts';
import { requestCost } from '#test/scale/model.ts';
import { DynamoRecorder } from '#test/scale/recorder.ts';
import {
  dynamodbEndpoint,
  type FreshTable,
  freshTable,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
} from '#test/support/dynamodb.ts';

let table: FreshTable;
let doc: ReturnType<typeof createDocumentClient>;
let recorder: DynamoRecorder;

beforeAll(async () => {
  table = await freshTable('scale-recorder');
  doc = createDocumentClient({
    region: LOCAL_REGION,
    endpoint: dynamodbEndpoint(),
    credentials: LOCAL_CREDENTIALS,
  });
  recorder = new DynamoRecorder(table.base);
  recorder.install(doc);
});
afterAll(async () => {
  doc.destroy();
  await table.drop();
});

const item = (id: string, bytes: number, extra: Record<string, string> = {}) => ({
  PK: `SCALE#${id}`,
  SK: `SCALE#${id}`,
  ...extra,
  body: 'x'.repeat(bytes),
});
const sizeOf = (value: Record<string, unknown>) => itemSize(marshall(value));

describe('the recorder prices each call by DynamoDB’s rules', () => {
  it('a put on the size written, agreeing with DynamoDB Local; an update on the larger image; a delete on the item removed', async () => {
    const big = item('a', 3500);
    recorder.reset();
    await doc.send(new PutCommand({ TableName: table.tableName, Item: big }));
    const [put] = recorder.calls;
    expect(put?.accesses).toEqual([
      {
        action: 'put',
        partition: 'SCALE#a',
        sortKey: 'SCALE#a',
        bytes: sizeOf(big),
        units: 4,
        transactional: false,
      },
    ]);
    expect(put?.localUnits).toBe(4);

    recorder.reset();
    await doc.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: { PK: big.PK, SK: big.SK },
        UpdateExpression: 'SET body = :b',
        ExpressionAttributeValues: { ':b': 'y' },
      }),
    );
    // Shrunk to a few bytes, still priced on the 3.5 KB it was.
    expect(recorder.calls[0]?.accesses[0]).toMatchObject({ action: 'update', bytes: sizeOf(big), units: 4 });

    recorder.reset();
    await doc.send(new DeleteCommand({ TableName: table.tableName, Key: { PK: big.PK, SK: big.SK } }));
    expect(recorder.calls[0]?.accesses[0]).toMatchObject({ action: 'delete', units: 1 });
  });

  it('a transaction at 2× per action, its condition check included, and the index entry it adds at 1×', async () => {
    const checked = item('b', 100);
    await doc.send(new PutCommand({ TableName: table.tableName, Item: checked }));
    const indexed = item('c', 1500, { [attr.gsi1pk]: 'ORG#scale', [attr.gsi1sk]: 'SCALE#c' });
    recorder.reset();
    await doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table.tableName, Item: indexed } },
          {
            ConditionCheck: {
              TableName: table.tableName,
              Key: { PK: checked.PK, SK: checked.SK },
              ConditionExpression: 'attribute_exists(PK)',
            },
          },
        ],
      }),
    );
    const cost = requestCost(recorder.calls);
    expect(cost).toMatchObject({
      itemsWritten: 1,
      itemsChecked: 1,
      indexWrites: 1,
      trueWru: 2 * 2 + 2 * 1 + 2,
    });
    expect(Object.fromEntries(cost.writePartitions)).toEqual({
      'SCALE#c': 4,
      'SCALE#b': 2,
      'GSI1:ORG#scale': 2,
    });
  });

  it('a failed conditional write is still charged, on the item as it stands', async () => {
    const taken = item('d', 2500);
    await doc.send(new PutCommand({ TableName: table.tableName, Item: taken }));
    recorder.reset();
    await expect(
      doc.send(
        new PutCommand({
          TableName: table.tableName,
          Item: taken,
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      ),
    ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(recorder.calls[0]).toMatchObject({ failed: true, indexWrites: [] });
    expect(recorder.calls[0]?.accesses[0]).toMatchObject({ units: 3 });
  });

  it('a Query page on the sum of what it read, by its partition, consistent or not', async () => {
    for (const n of [1, 2, 3]) {
      await doc.send(
        new PutCommand({
          TableName: table.tableName,
          Item: { PK: 'SCALE#list', SK: `E#${n}`, body: 'z'.repeat(2000) },
        }),
      );
    }
    recorder.reset();
    await doc.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': 'PK' },
        ExpressionAttributeValues: { ':pk': 'SCALE#list' },
        ConsistentRead: true,
      }),
    );
    const cost = requestCost(recorder.calls);
    // Three items of a little over 2 KB: 6 KB and more, two 4 KB units.
    expect(cost).toMatchObject({ itemsRead: 3, trueRru: 2 });
    expect(Object.fromEntries(cost.readPartitions)).toEqual({ 'SCALE#list': 2 });
    expect(recorder.calls[0]?.localUnits).toBe(2);
  });
});
