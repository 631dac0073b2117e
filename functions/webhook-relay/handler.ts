import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { forgetExpiredEntries, type Redelivery } from '#shared/data/deliveries.ts';
import { type OutboxEventRecord, record } from '#shared/data/records.ts';
import type { Key } from '#shared/data/table.ts';
import { productionQueue } from '#shared/queue/production.ts';
import { productionDependencies } from '#shared/runtime.ts';
import {
  type RelayDependencies,
  relayEvents,
  relayRecordKind,
  relayRedeliveries,
} from '#shared/webhooks/relay.ts';

/** The outbox items of a stream batch, in stream order (the mapping's filter already chose them). */
const outboxEvents = (records: DynamoDBRecord[]): OutboxEventRecord[] =>
  records
    .filter((r) => relayRecordKind(r) === 'outbox' && r.dynamodb?.NewImage)
    .map((r) =>
      record<OutboxEventRecord>(unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>)),
    );

/** The Redeliver requests of a stream batch, in stream order. */
const redeliveries = (records: DynamoDBRecord[]): Redelivery[] =>
  records
    .filter((r) => relayRecordKind(r) === 'redelivery' && r.dynamodb?.NewImage)
    .map((r) => unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>) as Redelivery);

/** The keys of the delivery list entries DynamoDB's TTL removed. */
const expiredEntries = (records: DynamoDBRecord[]): Key[] =>
  records
    .filter((r) => relayRecordKind(r) === 'expiredDelivery')
    .map((r) => unmarshall(r.dynamodb?.Keys as Record<string, AttributeValue>) as Key);

/**
 * DynamoDB Streams → webhook events and queue messages, Redeliver requests → their round's first
 * message, and expired delivery entries off their lists' counts; a failure retries the batch (all
 * three are idempotent).
 */
export const createHandler = (deps: RelayDependencies) => async (event: DynamoDBStreamEvent) => {
  await relayEvents(deps, outboxEvents(event.Records));
  await relayRedeliveries(deps, redeliveries(event.Records));
  await forgetExpiredEntries(deps.table, expiredEntries(event.Records), deps.now());
};

const { table, now } = productionDependencies();
export const handler = createHandler({ table, now, queue: productionQueue() });
