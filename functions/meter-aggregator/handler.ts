import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { usageEventRecord } from '#shared/data/usage-events.ts';
import { productionDependencies } from '#shared/runtime.ts';
import {
  type AggregatorDependencies,
  aggregateEvents,
  isAggregatorRecord,
  type StreamedEvent,
} from '#shared/services/meter-aggregation.ts';

/**
 * The stream batch as the aggregator's mapping hands it over: its records and, because the mapping
 * has a tumbling window (infra/usage.ts), the shard they come from. Each aggregate records the
 * highest sequence number it applied per shard, so the shard id is required.
 */
export type AggregatorStreamEvent = DynamoDBStreamEvent & { shardId?: string };

/** The usage events of a stream batch, with their sequence numbers, in stream order. */
export const streamedEvents = (records: DynamoDBRecord[]): StreamedEvent[] =>
  records.flatMap((r) =>
    isAggregatorRecord(r) && r.dynamodb?.NewImage
      ? [
          {
            sequence: r.dynamodb.SequenceNumber ?? '0',
            event: usageEventRecord(unmarshall(r.dynamodb.NewImage as Record<string, AttributeValue>)),
          },
        ]
      : [],
  );

/**
 * DynamoDB Streams → customer meters (`shared/services/meter-aggregation.ts`). A failure retries the
 * batch (every write is idempotent). Answers the tumbling window's state (none is kept: Lambda
 * treats an answer without `state` as a failure).
 */
export const createHandler = (deps: AggregatorDependencies) => async (event: AggregatorStreamEvent) => {
  const events = streamedEvents(event.Records);
  if (events.length > 0) {
    if (!event.shardId) throw new Error('the meter aggregator needs the stream shard id (a tumbling window)');
    await aggregateEvents(deps, event.shardId, events);
  }
  return { state: {} };
};

const { table, now } = productionDependencies();
export const handler = createHandler({ table, now });
