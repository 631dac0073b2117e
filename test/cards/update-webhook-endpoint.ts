import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { WEBHOOK } from '#test/bench/fixture.ts';
import { benchRun } from '#test/bench/work-kit.ts';
import { run, step } from '#test/support/iam-kit.ts';
import { endpointRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'update-webhook-endpoint',
  sample: {
    label: 'Update Webhook Endpoint (rename)',
    status: 200,
    params: { id: WEBHOOK },
    body: { name: 'Renamed' },
  },
  iam: async (world) => {
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://hooks.example/iam-update',
    });
    const update = (body: unknown) =>
      world.call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, {
        token: world.demo.personal_access_token,
        body,
      });
    return [
      // Name and URL move their list entries: old ones deleted, new ones put.
      step('rename and move', await update({ name: `IAM ${run}`, url: 'https://moved.example/iam' }), 200),
      step('disable', await update({ enabled: false }), 200),
      step('nothing to change (no write)', await update({}), 200),
    ];
  },
  isolation: () => endpointRow('PATCH', '', { name: 'taken over' }),
  dynamoWork: [
    {
      key: 'update-webhook-endpoint',
      label: 'Update Webhook Endpoint (rename)',
      status: 200,
      target: 3,
      send: (world, i) =>
        world.call(
          'update-webhook-endpoint',
          'PATCH',
          `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}`,
          {
            token: world.demo.personal_access_token,
            body: { name: `Bench ${benchRun}-${i}` },
          },
        ),
    },
  ],
});
