/**
 * The scale model's delivery attempt (issue 25): the real deliverer (`deliverMessage`, as its SQS
 * mapping drives it) sends one message per repetition to a loopback receiver answering 200, every
 * DynamoDB call recorded and priced as the API's are. Each repetition's webhook event is prepared
 * unrecorded as the relay records one: a fresh customer's `customer.created` outbox item (Create
 * Customer through its handler) and the webhook event pointing at it.
 *
 * Delivery lists are sharded (`LIST#DELIVERY#…#S<k>`, k from the attempt id): each attempt lands on
 * one shard of each list, so the per-tenant ceiling is the shards × 1,000 WCU/s over the units one
 * attempt puts on its shard of the hottest list, not 1,000 over them.
 */
import { randomUUID } from 'node:crypto';
import { DELIVERY_LIST_SHARDS, recordWebhookEvent } from '#shared/data/deliveries.ts';
import type { DeliveryQueue } from '#shared/queue/queue.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { openWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import { deliverMessage } from '#shared/webhooks/deliver.ts';
import { webhookEventId } from '#shared/webhooks/events.ts';
import { outboxOf } from '#test/support/outbox.ts';
import { startReceiver } from '#test/support/receiver.ts';
import { type CaseModel, caseModel, PARTITION_WCU_PER_SECOND, requestCost } from './model.ts';
import type { RecordedCall } from './recorder.ts';
import { quietly, type ScaleWorld } from './run-model.ts';

const SHARD = /#S\d+$/;

export async function modelDeliveryAttempt(
  scale: ScaleWorld,
  options: { repetitions: number; warmups: number },
): Promise<CaseModel> {
  const { world, recorder } = scale;
  const receiver = await startReceiver(() => 200);
  const deps: Dependencies = {
    ...world.admin,
    table: world.table,
    webhooks: { ...world.admin.webhooks, addresses: { allowLoopback: true } },
  };
  const queue: DeliveryQueue = {
    send: async () => {},
    sendBatch: async () => {},
    receive: async () => [],
    delete: async () => {},
    changeVisibility: async () => {},
  };
  try {
    const { endpoint } = await openWebhookEndpoint(deps, world.demo.organization_id, {
      url: receiver.url,
      name: 'scale model receiver',
      format: 'raw',
      events: ['customer.created'],
    });
    const repetitions: RecordedCall[][] = [];
    for (let i = 0; i < options.warmups + options.repetitions; i++) {
      recorder.enabled = false;
      const created = await quietly(() =>
        world.call('create-customer', 'POST', '/v1/customers/', {
          token: world.demo.personal_access_token,
          body: { email: `scale-delivery-${randomUUID()}@example.com` },
        }),
      );
      const customer = JSON.parse(created.body ?? '{}') as { id: string };
      const [event] = await outboxOf(world.table, 'customer', customer.id);
      if (!event) throw new Error('no outbox item for the delivery case');
      const stored = event as unknown as { PK: string; SK: string };
      const eventKey = { PK: stored.PK, SK: stored.SK };
      const id = webhookEventId(event.id, endpoint.id);
      await recordWebhookEvent(world.table, {
        id,
        event_id: event.id,
        endpoint_id: endpoint.id,
        organization_id: event.organization_id,
        type: event.type,
        event_key: eventKey,
        created_at: event.timestamp,
        modified_at: null,
        status: 'pending',
        round: 1,
        attempts: 0,
        last_http_code: null,
      });
      recorder.enabled = true;
      recorder.reset();
      const outcome = await quietly(() =>
        deliverMessage(
          { ...deps, queue },
          {
            messageId: randomUUID(),
            receiptHandle: randomUUID(),
            receiveCount: 1,
            body: JSON.stringify({
              webhook_event_id: id,
              endpoint_id: endpoint.id,
              round: 1,
              event_key: eventKey,
            }),
          },
        ),
      );
      if (outcome !== 'delivered') throw new Error(`the delivery case's attempt was ${outcome}`);
      if (i >= options.warmups) repetitions.push([...recorder.calls]);
    }
    const model = caseModel(
      {
        key: 'webhook-deliverer',
        label: 'Deliver one message (the deliverer; the receiver answers 200)',
        operation: 'webhook-deliverer',
        status: 200,
      },
      repetitions,
    );
    // The hottest list, by family (its shards together): units one attempt puts on its shard.
    const families = new Map<string, number[]>();
    for (const calls of repetitions) {
      const perFamily = new Map<string, number>();
      for (const [partition, units] of requestCost(calls).writePartitions) {
        if (!SHARD.test(partition)) continue;
        const family = partition.replace(SHARD, '#S<shard>');
        perFamily.set(family, Math.max(perFamily.get(family) ?? 0, units));
      }
      for (const [family, units] of perFamily) families.set(family, [...(families.get(family) ?? []), units]);
    }
    let hottest: CaseModel['hotWrite'];
    for (const [family, all] of families) {
      if (all.length !== repetitions.length) continue;
      const units = all.reduce((a, b) => a + b, 0) / all.length;
      if (!hottest || units > hottest.units) {
        hottest = {
          partition: `${family} (${DELIVERY_LIST_SHARDS} shards)`,
          units,
          ceiling: (PARTITION_WCU_PER_SECOND * DELIVERY_LIST_SHARDS) / units,
        };
      }
    }
    return { ...model, hotWrite: hottest ?? model.hotWrite };
  } finally {
    await receiver.close();
  }
}
