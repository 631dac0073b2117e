import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { getWebhookEvent, startRound } from '#shared/data/deliveries.ts';
import {
  keys,
  LIST_COUNT_PREFIX,
  listKeys,
  partitions,
  REDELIVERY_SORT_KEY_PREFIX,
  subscriptionListOwners,
} from '#shared/data/table.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import { webhookEventId } from '#shared/webhooks/events.ts';
import type { DeliveryMessage } from '#shared/webhooks/relay.ts';
import { freshCustomer, run, type Step } from '#test/support/iam-kit.ts';
import { seedWebhookEvent } from '#test/support/outbox.ts';
import { nextSequence, storedSubscriptions } from '#test/support/subscription-counts.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';
import { seedCustomerMeter } from './get-customer-meter.ts';

export default defineCard({
  name: 'webhook-relay',
  // The webhook pipeline's functions, driven as their event source mappings drive them.
  iam: relayScenario,
});

/**
 * The relay, given one stream batch as its event source mapping gives it: the insert of a fresh
 * customer's `customer.created` outbox item (its organization's endpoint list read, one webhook event
 * recorded per subscribed endpoint, the messages queued; the endpoint also listens to
 * `customer.state_changed`, so the customer, its subscriptions, its organization's meters, its
 * customer meter and that one's usage are read and its state's outbox item put), the insert of a Redeliver request (its
 * event's round read, its message queued), the TTL removal of a delivery list entry (ignored:
 * nothing is kept per expired entry) and the insert of a subscription (its count marker read, then
 * the marker and the count shards of its four lists written in one transaction).
 */
async function relayScenario(world: World): Promise<Step[]> {
  const { endpoint } = await createWebhookEndpoint(world.admin, {
    organizationId: world.demo.organization_id,
    url: `https://hooks.example/iam-relay/${run}`,
    events: ['customer.created', 'customer.state_changed'],
  });
  const customer = await freshCustomer(world);
  // A customer meter of the customer: its state reads every kind of item.
  await seedCustomerMeter(world, world.demo.organization_id, customer.id, 1);
  const [outboxItem] = (await outboxItems(world.table, 'customer', customer.id)).filter(
    (e) => e.type === 'customer.created',
  );
  const delivered = await seedWebhookEvent(world.table, world.demo.organization_id, endpoint.id);
  // A Redeliver of the delivered event, as the API writes it: its next round and the request.
  await startRound(world.table, delivered.id, [world.demo.organization_id], new Date().toISOString(), null);
  const [redelivery] =
    (
      await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
          ExpressionAttributeValues: {
            ':pk': keys.webhookEvent(delivered.id).PK,
            ':sk': REDELIVERY_SORT_KEY_PREFIX,
          },
        }),
      )
    ).Items ?? [];
  if (!outboxItem || !redelivery) throw new Error('the relay scenario found nothing to relay');
  // A delivery list entry's TTL removal, as a mapping created before the delivery log's redesign hands it over.
  const entry = { PK: `${partitions.deliveryList}${world.demo.organization_id}`, SK: 'created_at#x#y' };
  // A new subscription, as the API writes it: its stream image is counted into its four lists.
  const subscribed = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: customer.id },
  });
  const subscription = (await storedSubscriptions(world.table)).find((s) => s.id === subscribed.body?.id);
  if (!subscription) throw new Error('the relay scenario found no subscription to count');
  // The seeding's aggregation wrote one already (its organization listens).
  const statesBefore = await stateEvents(world, customer.id);
  const queue = new LocalQueue({ visibilityTimeoutSeconds: 30 });
  // Imported when run: a handler module wires its production dependencies at import (the bench
  // loads every card without them).
  const { createHandler: createRelay } = await import('#functions/webhook-relay/handler.ts');
  const relay = createRelay({ ...world.depsFor('webhook-relay'), queue });
  const ran = await relay({
    Records: [
      {
        eventName: 'INSERT',
        dynamodb: {
          Keys: marshall({ PK: outboxItem.PK, SK: outboxItem.SK }),
          NewImage: marshall(outboxItem),
        },
      },
      {
        eventName: 'INSERT',
        dynamodb: {
          Keys: marshall({ PK: redelivery.PK, SK: redelivery.SK }),
          NewImage: marshall(redelivery),
        },
      },
      { eventName: 'REMOVE', dynamodb: { Keys: marshall({ PK: entry.PK, SK: entry.SK }) } },
      {
        eventName: 'INSERT',
        dynamodb: {
          Keys: marshall(keys.subscription(subscription.id)),
          NewImage: marshall({ ...keys.subscription(subscription.id), ...subscription }),
          SequenceNumber: nextSequence(),
        },
      },
    ],
  } as DynamoDBStreamEvent).then(
    () => 'ran',
    () => 'failed',
  );
  const recordedId = webhookEventId(String(outboxItem.id), endpoint.id);
  const states = await stateEvents(world, customer.id);
  const recorded = await getWebhookEvent(world.table, recordedId);
  const queued = (await queue.receive({ max: 10 })).map((m) => JSON.parse(m.body) as DeliveryMessage);
  const roundOf = (id: string) => queued.find((m) => m.webhook_event_id === id)?.round;
  return [
    { what: 'a stream batch relayed', got: ran, expected: 'ran' },
    { what: 'a webhook event for the endpoint', got: String(recorded?.status), expected: 'pending' },
    { what: 'its message queued', got: String(roundOf(recordedId)), expected: '1' },
    { what: "the redelivered event's new round queued", got: String(roundOf(delivered.id)), expected: '2' },
    {
      what: "the customer's state_changed event written once",
      got: String(states.length - statesBefore.length),
      expected: '1',
    },
    {
      what: "the new subscription in its customer's list's count",
      got: String(await customerSubscriptionCount(world, customer.id)),
      expected: '1',
    },
  ];
}

/** A customer's `customer.state_changed` outbox items. */
const stateEvents = async (world: World, customerId: string) =>
  (await outboxItems(world.table, 'customer', customerId)).filter((e) => e.type === 'customer.state_changed');

/** Items of an object's outbox partition, as stored (the relay's stream image). */
async function outboxItems(table: World['table'], kind: string, id: string) {
  const result = await table.doc.send(
    new QueryCommand({
      TableName: table.name,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': `${partitions.event}${kind.toUpperCase()}#${id}` },
      ConsistentRead: true,
    }),
  );
  return result.Items ?? [];
}

/** The count of a customer's subscription list, summed over its shards (the registry items hold none). */
async function customerSubscriptionCount(world: World, customerId: string) {
  const result = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :count)',
      ExpressionAttributeValues: {
        ':pk': listKeys.partition(
          'subscriptionCustomerList',
          subscriptionListOwners.customer(world.demo.organization_id, customerId),
        ),
        ':count': LIST_COUNT_PREFIX,
      },
      ConsistentRead: true,
    }),
  );
  return (result.Items ?? []).reduce((sum, shard) => sum + Number(shard.entry_count ?? 0), 0);
}
