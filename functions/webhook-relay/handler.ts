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

/** The new images of a stream batch's records of one kind (`relayRecordKind`), with each record, in stream order. */
const imagesOf = (records: DynamoDBRecord[], kind: NonNullable<ReturnType<typeof relayRecordKind>>) =>
  records.flatMap((r) =>
    relayRecordKind(r) === kind && r.dynamodb?.NewImage
      ? [{ record: r, image: unmarshall(r.dynamodb.NewImage as Record<string, AttributeValue>) }]
      : [],
  );

/** The outbox items of a stream batch (with their keys), in stream order (the mapping's filter chose them). */
const outboxEvents = (records: DynamoDBRecord[]): (OutboxEventRecord & Key)[] =>
  imagesOf(records, 'outbox').map(({ image }) => ({
    ...record<OutboxEventRecord>(image),
    PK: String(image.PK),
    SK: String(image.SK),
  }));

/** The Redeliver requests of a stream batch, in stream order. */
const redeliveries = (records: DynamoDBRecord[]): Redelivery[] =>
  imagesOf(records, 'redelivery').map(({ image }) => image as Redelivery);

/** Subscriptions created or changed, each with its record's sequence number (the counts' projection). */
const subscriptionImages = (records: DynamoDBRecord[]) =>
  imagesOf(records, 'subscription').map(({ record: r, image }) => ({
    sequence: r.dynamodb?.SequenceNumber ?? '0',
    subscription: record<StoredSubscription>(image),
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
