import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { WEBHOOK } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { endpointRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'reset-webhook-endpoint-secret',
  sample: {
    label: 'Reset Webhook Endpoint Secret',
    status: 200,
    params: { id: WEBHOOK },
  },
  iam: async (world) => {
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://hooks.example/iam-reset',
    });
    const reset = () =>
      world.call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}/secret`, {
        token: world.demo.personal_access_token,
      });
    return [step('reset', await reset(), 200), step('reset again', await reset(), 200)];
  },
  isolation: () => endpointRow('PATCH', '/secret'),
  dynamoWork: [
    {
      key: 'reset-webhook-endpoint-secret',
      label: 'Reset Webhook Endpoint Secret',
      status: 200,
      target: 3,
      send: (world) =>
        world.call(
          'reset-webhook-endpoint-secret',
          'PATCH',
          `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}/secret`,
          { token: world.demo.personal_access_token },
        ),
    },
  ],
});
