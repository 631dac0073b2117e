import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Redelivery } from '#shared/data/deliveries.ts';
import { type OutboxEventRecord, record, type StoredSubscription } from '#shared/data/records.ts';
import { projectSubscriptionCounts } from '#shared/data/subscription-counts.ts';
import type { Key } from '#shared/data/table.ts';
import { productionQueue } from '#shared/queue/production.ts';
import { productionDependencies } from '#shared/runtime.ts';
import { endpointsReader, writeStateChanges } from '#shared/webhooks/customer-state-events.ts';
import {
  type RelayDependencies,
  relayEvents,
  relayRecordKind,
  relayRedeliveries,
  relayStateChanges,
} from '#shared/webhooks/relay.ts';

/** The new images of a stream batch's records of one kind (`relayRecordKind`), with each record, in stream order. */
const imagesOf = (records: DynamoDBRecord[], kind: NonNullable<ReturnType<typeof relayRecordKind>>) =>
  records.flatMap((r) =>
    relayRecordKind(r) === kind && r.dynamodb?.NewImage
      ? [{ record: r, image: unmarshall(r.dynamodb.NewImage as Record<string, AttributeValue>) }]
      : [],
  );

/**
 * The outbox items of a stream batch (with their keys), each with its record's sequence number, in
 * stream order (the mapping's filter chose them).
 */
const outboxEvents = (records: DynamoDBRecord[]): { sequence: string; event: OutboxEventRecord & Key }[] =>
  imagesOf(records, 'outbox').map(({ record: r, image }) => ({
    sequence: r.dynamodb?.SequenceNumber ?? '0',
    event: { ...record<OutboxEventRecord>(image), PK: String(image.PK), SK: String(image.SK) },
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
 * DynamoDB Streams → webhook events and queue messages, the changed customers' states
 * (`customer.state_changed` outbox items, for organizations that listen), Redeliver requests → their
 * round's first message, and subscriptions created or changed into their lists' counts; a failure
 * retries the batch (all four are idempotent). The batch's endpoint lists are read once. Any other
 * record (such as a delivery list entry's TTL removal, which a mapping created before the delivery
 * log's redesign still hands over) is ignored: nothing is kept per expired entry.
 */
export const createHandler = (deps: RelayDependencies) => async (event: DynamoDBStreamEvent) => {
  const outbox = outboxEvents(event.Records);
  const subscriptions = subscriptionImages(event.Records);
  const endpointsOf = endpointsReader(deps.table);
  await relayEvents(
    deps,
    outbox.map(({ event: e }) => e),
    endpointsOf,
  );
  await writeStateChanges(deps.table, endpointsOf, relayStateChanges(outbox, subscriptions), deps.now());
  await relayRedeliveries(deps, redeliveries(event.Records));
  await projectSubscriptionCounts(deps.table, subscriptions);
};

const { table, now } = productionDependencies();
export const handler = createHandler({ table, now, queue: productionQueue() });
