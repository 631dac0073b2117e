import { randomUUID } from 'node:crypto';
import { WEBHOOK_EVENT } from '#test/bench/fixture.ts';
import { key, step } from '#test/support/iam-kit.ts';
import { seedWebhookEvent } from '#test/support/outbox.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'redeliver-webhook-event',
  sample: {
    label: 'Redeliver Webhook Event',
    status: 202,
    params: { id: WEBHOOK_EVENT },
  },
  iam: async (world) => {
    const event = await seedWebhookEvent(
      world.table,
      world.demo.organization_id,
      world.demo.webhook_endpoint_ids[1] as string,
    );
    const redeliver = (idempotencyKey: string, id: string) =>
      world.call('POST', `/v1/webhooks/events/${id}/redeliver`, {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': idempotencyKey },
      });
    const unknown = randomUUID();
    return [
      step('redeliver', await redeliver(key('redeliver'), event.id), 202),
      step('replay with the same key', await redeliver(key('redeliver'), event.id), 202),
      // Refused after the key is claimed: the claim is released, so the retry runs again.
      step('an unknown event, refused after claiming its key', await redeliver(key('unknown'), unknown), 404),
      step('retry of the refused request', await redeliver(key('unknown'), unknown), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await seedWebhookEvent(world.table, other.organization_id, other.webhook_endpoint_id);
      // Past the 90 days of retention, not yet removed by TTL.
      const expired = await seedWebhookEvent(
        world.table,
        world.demo.organization_id,
        world.demo.webhook_endpoint_ids[1] as string,
        new Date(Date.now() - 91 * 86_400_000),
      );
      return [
        ['webhook event of another organization', theirs.id],
        ['webhook event past its retention', expired.id],
      ];
    },
    send: (id) =>
      world.call('POST', `/v1/webhooks/events/${id}/redeliver`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'redeliver-webhook-event',
      label: 'Redeliver Webhook Event',
      status: 202,
      target: 2,
      send: (world) =>
        world.call(
          'redeliver-webhook-event',
          'POST',
          `/v1/webhooks/events/${world.demo.webhook_event_id}/redeliver`,
          { token: world.demo.personal_access_token },
        ),
    },
  ],
});
