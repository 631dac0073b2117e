import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Redelivery } from '#shared/data/deliveries.ts';
import { type OutboxEventRecord, record, type StoredSubscription } from '#shared/data/records.ts';
import { projectSubscriptionCounts } from '#shared/data/subscription-counts.ts';
import type { Key } from '#shared/data/table.ts';
import { productionQueue } from '#shared/queue/production.ts';
import { productionDependencies } from '#shared/runtime.ts';
import {
  type RelayDependencies,
  relayEvents,
  relayRecordKind,
  relayRedeliveries,
} from '#shared/webhooks/relay.ts';

/** The outbox items of a stream batch (with their keys), in stream order (the mapping's filter chose them). */
const outboxEvents = (records: DynamoDBRecord[]): (OutboxEventRecord & Key)[] =>
  records
    .filter((r) => relayRecordKind(r) === 'outbox' && r.dynamodb?.NewImage)
    .map((r) => {
      const image = unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>);
      return { ...record<OutboxEventRecord>(image), PK: String(image.PK), SK: String(image.SK) };
    });

/** The Redeliver requests of a stream batch, in stream order. */
const redeliveries = (records: DynamoDBRecord[]): Redelivery[] =>
  records
    .filter((r) => relayRecordKind(r) === 'redelivery' && r.dynamodb?.NewImage)
    .map((r) => unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>) as Redelivery);

/** Subscriptions created or changed, each with its record's sequence number (the counts' projection). */
const subscriptionImages = (records: DynamoDBRecord[]) =>
  records
    .filter((r) => relayRecordKind(r) === 'subscription' && r.dynamodb?.NewImage)
    .map((r) => ({
      sequence: r.dynamodb?.SequenceNumber ?? '0',
      subscription: record<StoredSubscription>(
        unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>),
      ),
    }));

/**
 * DynamoDB Streams → webhook events and queue messages, Redeliver requests → their round's first
 * message, and subscriptions created or changed into their lists' counts; a failure retries the
 * batch (all three are idempotent). Any other record (such as a delivery list entry's TTL removal,
 * which a mapping created before the delivery log's redesign still hands over) is ignored: nothing
 * is kept per expired entry.
 */
export const createHandler = (deps: RelayDependencies) => async (event: DynamoDBStreamEvent) => {
  await relayEvents(deps, outboxEvents(event.Records));
  await relayRedeliveries(deps, redeliveries(event.Records));
  await projectSubscriptionCounts(deps.table, subscriptionImages(event.Records));
};

const { table, now } = productionDependencies();
export const handler = createHandler({ table, now, queue: productionQueue() });
