/**
 * The relay: outbox items, as the table's stream delivers them, become one webhook event per target
 * endpoint and one queue message each.
 *
 * Targets are the organization's endpoints that are live, enabled and subscribed to the event's type,
 * chosen when the event is relayed, from the organization's endpoint list (`LIST#WEBHOOK#<org>`,
 * strongly consistent: one Query per organization per batch). Each webhook event's id derives from (event, endpoint) and is put
 * only if absent; its message is sent whether or not this run recorded it, because the run that did may
 * have stopped before sending. So a re-run after a crash or timeout at any step records nothing twice
 * and loses nothing; the messages it repeats name a webhook event the deliverer has already settled
 * (skipped) or that the receiver dedupes by `webhook-id`.
 */
import {
  access as deliveriesAccess,
  type Redelivery,
  recordWebhookEvent,
  redeliveryMessages,
} from '../data/deliveries.ts';
import type { Table } from '../data/dynamo.ts';
import type { FunctionAccess } from '../data/grants.ts';
import type {
  OutboxEventRecord,
  StoredSubscription,
  WebhookEndpointRecord,
  WebhookEventRecord,
} from '../data/records.ts';
import { access as subscriptionCountsAccess } from '../data/subscription-counts.ts';
import { type Key, partitions, REDELIVERY_SORT_KEY_PREFIX } from '../data/table.ts';
import { access as webhooksAccess } from '../data/webhooks.ts';
import { logInfo } from '../observability/telemetry.ts';
import type { DeliveryQueue } from '../queue/queue.ts';
import {
  type EndpointsOf,
  endpointsReader,
  type StateChange,
  stateChangesAccess,
} from './customer-state-events.ts';
import { webhookEventId } from './events.ts';

export interface RelayDependencies {
  table: Table;
  queue: DeliveryQueue;
  now: () => Date;
}

/**
 * What the deliverer is told: which webhook event, which endpoint, which delivery round, and where
 * the payload is (the event's outbox item, read in the deliverer's one batch; absent from messages
 * queued before the payload moved there, whose webhook event holds it).
 */
export interface DeliveryMessage {
  webhook_event_id: string;
  endpoint_id: string;
  round: number;
  event_key?: Key;
}

/**
 * The stream records the relay takes (the event source mapping's filters, and the local poller's):
 * inserts of outbox items and of Redeliver requests, and subscriptions created or changed. (Expired delivery list entries need nothing:
 * a list counts its attempts by day and shows whole days, `shared/data/deliveries.ts`.)
 */
export const relayStreamFilters = {
  outbox: { eventName: 'INSERT', partitionKeyPrefix: partitions.event },
  redelivery: {
    eventName: 'INSERT',
    partitionKeyPrefix: partitions.webhookEvent,
    sortKeyPrefix: REDELIVERY_SORT_KEY_PREFIX,
  },
  /** Subscriptions created or changed: their lists' counts (`shared/data/subscription-counts.ts`). */
  subscription: {
    eventNames: ['INSERT', 'MODIFY'],
    partitionKeyPrefix: partitions.subscription,
    sortKeyPrefix: partitions.subscription,
  },
} as const;

/** A stream record's kind for the relay, by the filters above; undefined for anything else. */
export function relayRecordKind(record: {
  eventName?: string;
  dynamodb?: { Keys?: Record<string, { S?: string } | undefined> };
}): keyof typeof relayStreamFilters | undefined {
  const pk = record.dynamodb?.Keys?.PK?.S ?? '';
  const sk = record.dynamodb?.Keys?.SK?.S ?? '';
  const { outbox, redelivery, subscription } = relayStreamFilters;
  if (record.eventName === outbox.eventName && pk.startsWith(outbox.partitionKeyPrefix)) return 'outbox';
  if (
    (subscription.eventNames as readonly string[]).includes(record.eventName ?? '') &&
    pk.startsWith(subscription.partitionKeyPrefix) &&
    sk.startsWith(subscription.sortKeyPrefix)
  ) {
    return 'subscription';
  }
  if (
    record.eventName === redelivery.eventName &&
    pk.startsWith(redelivery.partitionKeyPrefix) &&
    sk.startsWith(redelivery.sortKeyPrefix)
  ) {
    return 'redelivery';
  }
  return undefined;
}

export const isTarget = (endpoint: WebhookEndpointRecord, type: string): boolean =>
  endpoint.deleted_at === null && endpoint.enabled && endpoint.events.includes(type);

/** Relays events (in stream order); throws when anything failed, so the whole batch is retried. */
export async function relayEvents(
  deps: RelayDependencies,
  events: readonly (OutboxEventRecord & Key)[],
  endpointsOf: EndpointsOf = endpointsReader(deps.table),
): Promise<number> {
  const messages: { message: DeliveryMessage; organizationId: string }[] = [];
  for (const event of events) {
    const targets = (await endpointsOf(event.organization_id)).filter((endpoint) =>
      isTarget(endpoint, event.type),
    );
    const webhookEvents = targets.map(
      (endpoint): WebhookEventRecord => ({
        id: webhookEventId(event.id, endpoint.id),
        event_id: event.id,
        endpoint_id: endpoint.id,
        organization_id: event.organization_id,
        type: event.type,
        // The payload stays in the outbox item, stored once for every endpoint and attempt.
        event_key: { PK: event.PK, SK: event.SK },
        created_at: event.timestamp,
        modified_at: null,
        status: 'pending',
        round: 1,
        attempts: 0,
        last_http_code: null,
        correlation_id: event.correlation_id ?? null,
      }),
    );
    await Promise.all(webhookEvents.map((webhookEvent) => recordWebhookEvent(deps.table, webhookEvent)));
    for (const webhookEvent of webhookEvents) {
      messages.push({
        message: {
          webhook_event_id: webhookEvent.id,
          endpoint_id: webhookEvent.endpoint_id,
          round: 1,
          event_key: { PK: event.PK, SK: event.SK },
        },
        organizationId: event.organization_id,
      });
    }
    logInfo('webhook event relayed', {
      correlation_id: event.correlation_id ?? null,
      event_id: event.id,
      type: event.type,
      organization_id: event.organization_id,
      webhook_event_ids: webhookEvents.map((webhookEvent) => webhookEvent.id),
    });
  }
  await deps.queue.sendBatch(messages.map(queued));
  return messages.length;
}

/**
 * A message as queued: its tenant is its organization (SQS fair queue), so that one organization's
 * backlog or slow receivers do not hold back the others' deliveries.
 */
const queued = ({ message, organizationId }: { message: DeliveryMessage; organizationId: string }) => ({
  body: JSON.stringify(message),
  groupId: organizationId,
});

/**
 * Queues the first attempt of each Redeliver request's round (the round and the request were one
 * transaction, `startRound`); throws when anything failed, so the whole batch is retried (a message
 * sent twice names a round the deliverer settles once).
 */
export async function relayRedeliveries(
  deps: RelayDependencies,
  redeliveries: readonly Redelivery[],
): Promise<number> {
  const messages = await redeliveryMessages(deps.table, redeliveries);
  for (const message of messages) {
    const request = redeliveries.find((r) => r.webhook_event_id === message.webhook_event_id);
    logInfo('webhook event redelivery relayed', {
      correlation_id: request?.correlation_id ?? null,
      webhook_event_id: message.webhook_event_id,
      round: message.round,
    });
  }
  await deps.queue.sendBatch(
    messages.map(({ organization_id, ...message }) => queued({ message, organizationId: organization_id })),
  );
  return messages.length;
}

/** The outbox events after which a customer's state is sent (`customer.state_changed`). */
const CUSTOMER_CHANGES: readonly string[] = ['customer.created', 'customer.updated'];

/**
 * The customer state changes a relay batch carries (`writeStateChanges` writes one per customer):
 * its customers' `customer.created` / `customer.updated` outbox items, and its subscriptions' inserts
 * and changes (their customer's active subscriptions), each with its record's sequence number.
 */
export function relayStateChanges(
  outbox: readonly { sequence: string; event: OutboxEventRecord }[],
  subscriptions: readonly {
    sequence: string;
    subscription: Pick<StoredSubscription, 'organization_id' | 'customer_id' | 'created_at' | 'modified_at'>;
  }[],
): StateChange[] {
  return [
    ...outbox.flatMap(({ sequence, event }) =>
      CUSTOMER_CHANGES.includes(event.type)
        ? [
            {
              organizationId: event.organization_id,
              customerId: event.subject_id,
              sequence,
              at: event.timestamp,
              correlationId: event.correlation_id ?? null,
            },
          ]
        : [],
    ),
    ...subscriptions.map(({ sequence, subscription }) => ({
      organizationId: subscription.organization_id,
      customerId: subscription.customer_id,
      sequence,
      at: subscription.modified_at ?? subscription.created_at,
      correlationId: null,
    })),
  ];
}

/**
 * What this function may do (shared/data/grants.ts), keyed by its name: the grants of the data
 * functions it uses.
 */
export const functionAccess = (): Readonly<Record<string, FunctionAccess>> => ({
  'webhook-relay': {
    table: [
      ...webhooksAccess.organizationWebhookEndpoints,
      ...deliveriesAccess.relay,
      ...subscriptionCountsAccess.projectSubscriptionCounts,
      ...stateChangesAccess(),
    ],
  },
});
