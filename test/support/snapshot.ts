/**
 * One demo seed per test run: `globalSetup` seeds a table once, reads every item back, and each
 * test file's world copies those items into its own fresh table (a few parallel batch writes)
 * instead of running the whole seed (dozens of sequential transactions) again.
 */
import {
  type AttributeValue,
  BatchWriteItemCommand,
  type DynamoDBClient,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import type { AdminContext } from '#scripts/admin/commands.ts';
import { type DemoData, seedDemo } from '#scripts/local/seed.ts';

export interface SeedSnapshot {
  /** Every item of the seeded table, as DynamoDB attribute values (JSON-safe: no binary attributes). */
  items: Record<string, AttributeValue>[];
  demo: DemoData;
  /** The webhook key set the seed sealed secrets with (`shared/domain/keyring.ts`). */
  keySet: string;
}

/** The base URL the seed writes into demo links; in-process worlds have no server. */
export const IN_PROCESS_BASE_URL = 'http://in-process';

export async function takeSnapshot(
  client: DynamoDBClient,
  admin: AdminContext,
  keySet: string,
): Promise<SeedSnapshot> {
  const demo = await seedDemo(admin, IN_PROCESS_BASE_URL);
  const items: Record<string, AttributeValue>[] = [];
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: admin.table.name, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return { items, demo, keySet };
}

const BATCH = 25;

export async function restoreSnapshot(
  client: DynamoDBClient,
  tableName: string,
  snapshot: SeedSnapshot,
): Promise<void> {
  const batches: Record<string, AttributeValue>[][] = [];
  for (let i = 0; i < snapshot.items.length; i += BATCH) batches.push(snapshot.items.slice(i, i + BATCH));
  await Promise.all(
    batches.map(async (batch) => {
      let requests = batch.map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt > 10) throw new Error('DynamoDB Local kept items of the seed snapshot unprocessed');
        const result = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [tableName]: requests } }),
        );
        requests = (result.UnprocessedItems?.[tableName] ?? []).flatMap((request) =>
          request.PutRequest?.Item ? [{ PutRequest: { Item: request.PutRequest.Item } }] : [],
        );
      }
    }),
  );
}
