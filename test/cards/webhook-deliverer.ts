import { sqsEvent } from '#scripts/local/pipeline.ts';
import { getWebhookEvent, recordWebhookEvent } from '#shared/data/deliveries.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import { webhookEventId } from '#shared/webhooks/events.ts';
import { freshCustomer, type Step } from '#test/support/iam-kit.ts';
import { outboxOf } from '#test/support/outbox.ts';
import { startReceiver } from '#test/support/receiver.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'webhook-deliverer',
  iam: delivererScenario,
});

/**
 * The deliverer, given one SQS message as its event source mapping gives it: the webhook event and
 * its endpoint and its outbox item (the payload) read in one batch, the secret opened, the POST answered `410 Gone`, and the attempt
 * recorded with the endpoint disabled (its item and list entries) in one transaction.
 */
async function delivererScenario(world: World): Promise<Step[]> {
  // Imported when run: a handler module wires its production dependencies at import (the bench
  // loads every card without them).
  const receiver = await startReceiver(() => ({ status: 410, body: 'gone' }));
  try {
    const { loopbackEndpoint } = await import('#test/support/pipeline.ts');
    const { endpoint } = await loopbackEndpoint(world, receiver.url, ['customer.created']);
    // A fresh customer's customer.created outbox item holds the payload, as the relay records events.
    const customer = await freshCustomer(world);
    const [outbox] = await outboxOf(world.table, 'customer', customer.id);
    const outboxItem = outbox as unknown as { PK: string; SK: string; id: string; timestamp: string };
    const eventKey = { PK: outboxItem.PK, SK: outboxItem.SK };
    const webhookEvent = {
      id: webhookEventId(outboxItem.id, endpoint.id),
      event_id: outboxItem.id,
      endpoint_id: endpoint.id,
      organization_id: world.demo.organization_id,
      type: 'customer.created',
      event_key: eventKey,
      created_at: outboxItem.timestamp,
      modified_at: null,
      status: 'pending' as const,
      round: 1,
      attempts: 0,
      last_http_code: null,
    };
    await recordWebhookEvent(world.table, webhookEvent);
    const queue = new LocalQueue({ visibilityTimeoutSeconds: 30 });
    await queue.send(
      JSON.stringify({
        webhook_event_id: webhookEvent.id,
        endpoint_id: endpoint.id,
        round: 1,
        event_key: eventKey,
      }),
    );
    const deps = world.depsFor('webhook-deliverer');
    const { createHandler: createDeliverer } = await import('#functions/webhook-deliverer/handler.ts');
    const deliver = createDeliverer({
      ...deps,
      webhooks: { ...deps.webhooks, addresses: { allowLoopback: true } },
      queue,
      timeoutMs: 2_000,
    });
    const result = await deliver(sqsEvent(await queue.receive({ max: 10 }), 'arn:aws:sqs:local:0:iam')).catch(
      () => undefined,
    );
    const after = await getWebhookEvent(world.table, webhookEvent.id);
    const stored = await world.call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, {
      token: world.demo.personal_access_token,
    });
    return [
      { what: 'the batch handled', got: String(result?.batchItemFailures.length), expected: '0' },
      { what: 'the receiver reached', got: String(receiver.deliveries.length), expected: '1' },
      {
        what: 'the attempt recorded',
        got: `${after?.status} ${after?.last_http_code}`,
        expected: 'failed 410',
      },
      {
        what: 'the endpoint disabled (410 Gone)',
        got: String(stored.body.disabled_reason),
        expected: 'endpoint_gone',
      },
    ];
  } finally {
    await receiver.close();
  }
}
