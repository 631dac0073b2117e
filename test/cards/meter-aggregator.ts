import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import {
  customerMeterId,
  hourOf,
  readCustomerMeters,
  readHours,
  readUniqueValues,
} from '#shared/data/customer-meters.ts';
import { keys, partitions } from '#shared/data/table.ts';
import { getUsageEvent, storedUsageEvent, usageEventId } from '#shared/data/usage-events.ts';
import { freshCustomer, run, type Step } from '#test/support/iam-kit.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'meter-aggregator',
  // A stream function, driven as its event source mapping drives it.
  iam: aggregatorScenario,
});

/**
 * The aggregator, given one stream batch as its mapping gives it (with the shard id): two events of
 * a fresh customer, one naming it by id and one by external id, counted by a `sum` meter and a
 * `unique` meter: the organization's meter list read, the external id's guard read, the batch's
 * aggregates and customer meters read in one batch, the unique values put, each hour aggregate put
 * under its condition, the customer meters put; its organization listening to
 * `customer.state_changed`, the endpoint list, the customer and its state read, the state's event
 * put. Then the same batch again: nothing written; and four days on (an injected clock): the sum
 * meter's closed hour rolled up (its hours read, its customer meter put with the roll-up).
 */
async function aggregatorScenario(world: World): Promise<Step[]> {
  const customer = await freshCustomer(world);
  // Its organization listens to customer.state_changed, and the customer has a subscription: the
  // batch reads the endpoint list, the customer and its whole state, and puts its state's event.
  await createWebhookEndpoint(world.admin, {
    organizationId: world.demo.organization_id,
    url: `https://hooks.example/iam-aggregator/${run}`,
    events: ['customer.state_changed'],
  });
  const subscribed = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: customer.id },
  });
  if (subscribed.status !== 201) throw new Error(`Create Subscription answered ${subscribed.status}`);
  const name = `iam.aggregated.${run}.${randomUUID().slice(0, 8)}`;
  const meter = async (aggregation: unknown) => {
    const reply = await world.call('POST', '/v1/meters/', {
      token: world.demo.personal_access_token,
      body: {
        name: `IAM ${(aggregation as { func: string }).func} ${randomUUID().slice(0, 8)}`,
        filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
        aggregation,
      },
    });
    if (reply.status !== 201)
      throw new Error(`Create Meter answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    return String(reply.body.id);
  };
  const sum = await meter({ func: 'sum', property: 'tokens' });
  const unique = await meter({ func: 'unique', property: 'model' });
  const externalIds = [`iam-agg-${randomUUID()}`, `iam-agg-${randomUUID()}`];
  const ingested = await world.call('POST', '/v1/events/ingest', {
    token: world.demo.personal_access_token,
    body: {
      events: [
        { name, customer_id: customer.id, external_id: externalIds[0], metadata: { tokens: 3, model: 'a' } },
        {
          name,
          external_customer_id: customer.externalId,
          external_id: externalIds[1],
          metadata: { tokens: 4, model: 'b' },
        },
      ],
    },
  });
  if (ingested.status !== 200) throw new Error(`Ingest Events answered ${ingested.status}`);
  const stored = await Promise.all(
    externalIds.map((id) => getUsageEvent(world.table, usageEventId(world.demo.organization_id, id))),
  );
  const records = stored.map((event, i): DynamoDBRecord => {
    if (!event) throw new Error('the aggregator scenario found no stored event');
    const item = storedUsageEvent(event);
    return {
      eventName: 'INSERT',
      dynamodb: {
        Keys: marshall(keys.usageEvent(event.id)) as NonNullable<DynamoDBRecord['dynamodb']>['Keys'],
        NewImage: marshall(item) as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'],
        SequenceNumber: String(Date.now() * 100 + i),
      },
    };
  });
  // Imported when run: a handler module wires its production dependencies at import.
  const { createHandler } = await import('#functions/meter-aggregator/handler.ts');
  const aggregate = createHandler(world.depsFor('meter-aggregator'));
  const shardId = `shardId-iam-${randomUUID()}`;
  const ran = await aggregate({ Records: records, shardId }).then(
    () => 'ran',
    () => 'failed',
  );
  const again = await aggregate({ Records: records, shardId }).then(
    () => 'ran',
    () => 'failed',
  );
  // The same batch four days on: nothing folded again, and the sum meter's customer meter has a day
  // of closed hours, rolled up (its hours read, its item put with the roll-up).
  const later = createHandler({
    ...world.depsFor('meter-aggregator'),
    now: () => new Date(Date.now() + 4 * 86_400_000),
  });
  const rolled = await later({ Records: records, shardId }).then(
    () => 'ran',
    () => 'failed',
  );
  const hour = hourOf(stored[0]?.ingested_at ?? new Date().toISOString());
  const [sumHour] = await readHours(world.table, customerMeterId(customer.id, sum), hour, hour);
  const values = await readUniqueValues(world.table, customerMeterId(customer.id, unique), hour, hour);
  const sumState = sumHour?.state as { count?: number } | undefined;
  const states = await customerStateEvents(world, customer.id);
  const rollup = (await readCustomerMeters(world.table, [customerMeterId(customer.id, sum)])).get(
    customerMeterId(customer.id, sum),
  )?.rollup;
  return [
    { what: 'a stream batch aggregated', got: ran, expected: 'ran' },
    { what: 'the same batch again', got: again, expected: 'ran' },
    { what: 'the sum meter counted both events once', got: String(sumState?.count), expected: '2' },
    { what: 'the unique meter holds both values', got: [...values].sort().join(','), expected: '"a","b"' },
    { what: "the customer's state_changed event, written once", got: String(states.length), expected: '1' },
    { what: 'the same batch four days on', got: rolled, expected: 'ran' },
    {
      what: "the sum meter's closed hour rolled up",
      got: JSON.stringify(rollup?.state),
      expected: JSON.stringify(sumHour?.state),
    },
  ];
}

/** The customer's `customer.state_changed` outbox items. */
async function customerStateEvents(world: World, customerId: string) {
  const result = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': `${partitions.event}CUSTOMER#${customerId}` },
      ConsistentRead: true,
    }),
  );
  return (result.Items ?? []).filter((item) => item.type === 'customer.state_changed');
}
