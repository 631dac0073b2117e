/**
 * The transactional outbox: a change's webhook events are items written in the change's own
 * TransactWriteItems, so the change and its events exist together or not at all. Every service that
 * emits events appends `outboxWrites` to its transaction: one item per event, no extra round trip.
 * The table's stream carries the items to the relay (`shared/webhooks/relay.ts`); TTL removes them
 * after the retention period. Each carries the request's correlation id (API Gateway's request id,
 * from the request's telemetry scope, like its round-trip counters), which the relay and the
 * deliverer log.
 */

import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { currentTelemetry } from '../observability/telemetry.ts';
import { type ChangeEvent, EVENT_RETENTION_DAYS, type EventSubject, envelope } from '../webhooks/events.ts';
import { createOnly, run, type Table, type TransactItem } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { item, type OutboxEventRecord } from './records.ts';
import { attr, outboxKeys } from './table.ts';

const expiresAt = (at: string) => Math.floor(Date.parse(at) / 1000) + EVENT_RETENTION_DAYS * 86_400;

/**
 * The outbox items of one change, in the order the events happened (their sort keys increase).
 * `newId` names each event; ids must be fresh, as each item is created only if absent.
 */
export function outboxWrites(
  table: Table,
  subject: EventSubject,
  at: string,
  events: readonly ChangeEvent[],
  newId: () => string,
): TransactItem[] {
  return events.map((event, sequence) => {
    const record: OutboxEventRecord = {
      id: newId(),
      organization_id: subject.organizationId,
      type: event.type,
      timestamp: at,
      payload: envelope(event.type, at, event.data),
      subject_kind: subject.kind,
      subject_id: subject.id,
      correlation_id: currentTelemetry()?.requestId ?? null,
    };
    const key = outboxKeys.event(subject.kind, subject.id, at, sequence, record.id);
    return { Put: createOnly(table, item({ ...key, [attr.ttl]: expiresAt(at) }, 'outbox_event', record)) };
  });
}

/**
 * One event written after its change, by a stream consumer (`customer.state_changed`,
 * shared/webhooks/customer-state-events.ts): its id and time derive from the change, so the item's
 * key does too, and it is put only if absent. A stream batch handled again finds the item there and
 * writes nothing: answers whether this call wrote it.
 */
export async function putDerivedEvent(
  table: Table,
  subject: EventSubject,
  at: string,
  event: ChangeEvent,
  id: string,
  correlationId: string | null,
): Promise<boolean> {
  const record: OutboxEventRecord = {
    id,
    organization_id: subject.organizationId,
    type: event.type,
    timestamp: at,
    payload: envelope(event.type, at, event.data),
    subject_kind: subject.kind,
    subject_id: subject.id,
    correlation_id: correlationId,
  };
  const key = outboxKeys.event(subject.kind, subject.id, at, 0, id);
  try {
    await run(() =>
      table.doc.send(
        new PutCommand(
          createOnly(table, item({ ...key, [attr.ttl]: expiresAt(at) }, 'outbox_event', record)),
        ),
      ),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /** A change's events, put in the change's own transaction. */
  outboxWrites: [{ actions: ['dynamodb:PutItem'], leadingKeys: ['event'] }],
  /** An event a stream consumer derives from a change, put only if absent. */
  putDerivedEvent: [{ actions: ['dynamodb:PutItem'], leadingKeys: ['event'] }],
} as const satisfies DataAccess;
