import { step } from '#test/support/iam-kit.ts';
import { seedWebhookEventFromOutbox } from '#test/support/outbox.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-webhook-deliveries',
  sample: {
    label: 'List Webhook Deliveries',
    status: 200,
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/webhooks/deliveries${query}`, { token: world.demo.personal_access_token });
    const endpointId = world.demo.webhook_endpoint_ids[1] as string;
    // An attempt whose payload is in its event's outbox item: the page reads it back in its batch.
    await seedWebhookEventFromOutbox(
      world,
      world.demo.organization_id,
      endpointId,
      world.demo.personal_access_token,
    );
    return [
      step("the organization's list, newest first", await list('?limit=2'), 200),
      step(
        "an endpoint's failures (its list's view)",
        await list(`?endpoint_id=${endpointId}&succeeded=false`),
        200,
      ),
      step('past the end (counts only)', await list('?page=50'), 200),
    ];
  },
  isolation: {
    namesNoResource:
      "lists the caller's organizations' attempts only; an endpoint_id of another organization matches nothing (webhook-deliveries.test.ts)",
  },
  dynamoWork: [
    {
      key: 'list-webhook-deliveries',
      label: 'List Webhook Deliveries (page 1)',
      status: 200,
      // auth, per shard of the list its day counts and its entries, one batch of attempts and payloads.
      target: 10,
      send: (world) =>
        world.call('list-webhook-deliveries', 'GET', '/v1/webhooks/deliveries?limit=10', {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
