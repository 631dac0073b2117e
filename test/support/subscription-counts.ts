/**
 * The subscription lists' counts as the stream's projection keeps them (`shared/data/subscription-
 * counts.ts`), for test tables without a stream: every subscription item of the table is handed to
 * the projection as the relay would hand over its newest stream record, with a sequence number above
 * every one used before in this process. After `projectSubscriptionCounts(table)` the counts are
 * those the projection reaches once the stream has caught up.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Table } from '#shared/data/dynamo.ts';
import { record, type StoredSubscription } from '#shared/data/records.ts';
import {
  projectSubscriptionCounts as project,
  type SubscriptionImage,
} from '#shared/data/subscription-counts.ts';
import { partitions } from '#shared/data/table.ts';

let sequence = BigInt(Date.now()) * 1_000_000n;
/** A stream sequence number above every one given before (as DynamoDB's grow per item). */
export const nextSequence = (): string => String(++sequence);

/** Every subscription item of the table, as stored. */
export async function storedSubscriptions(table: Table): Promise<StoredSubscription[]> {
  const found: StoredSubscription[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await table.doc.send(
      new ScanCommand({
        TableName: table.name,
        FilterExpression: 'begins_with(PK, :p) AND begins_with(SK, :p)',
        ExpressionAttributeValues: { ':p': partitions.subscription },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) found.push(record<StoredSubscription>(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

/** The projection run over every subscription's current image: the counts once the stream caught up. */
export async function projectSubscriptionCounts(table: Table): Promise<void> {
  const images: SubscriptionImage[] = (await storedSubscriptions(table)).map((subscription) => ({
    sequence: nextSequence(),
    subscription,
  }));
  await project(table, images);
}
