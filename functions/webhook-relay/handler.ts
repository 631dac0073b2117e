import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { type OutboxEventRecord, record } from '#shared/data/records.ts';
import { productionDependencies } from '#shared/runtime.ts';
import { outboxStreamFilter, type RelayDependencies, relayEvents } from '#shared/webhooks/relay.ts';
import { productionQueue } from '#shared/webhooks/runtime.ts';

/** The outbox items of a stream batch, in stream order (the mapping's filter already chose them). */
const outboxEvents = (records: DynamoDBRecord[]): OutboxEventRecord[] =>
  records
    .filter(
      (r) =>
        r.eventName === outboxStreamFilter.eventName &&
        r.dynamodb?.Keys?.PK?.S?.startsWith(outboxStreamFilter.partitionKeyPrefix) &&
        r.dynamodb.NewImage,
    )
    .map((r) =>
      record<OutboxEventRecord>(unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>)),
    );

/** DynamoDB Streams → webhook events and queue messages; a failure retries the batch (idempotent). */
export const createHandler = (deps: RelayDependencies) => async (event: DynamoDBStreamEvent) => {
  await relayEvents(deps, outboxEvents(event.Records));
};

export const handler = createHandler({ table: productionDependencies().table, queue: productionQueue() });
