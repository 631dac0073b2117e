import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { UNKNOWN_ID, WEBHOOK } from '#test/bench/fixture.ts';
import { endpointsToDelete } from '#test/bench/work-kit.ts';
import { forgetCapCounters, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'delete-webhook-endpoint',
  sample: {
    label: 'Delete Webhook Endpoint',
    status: 204,
    params: { id: WEBHOOK },
  },
  iam: async (world) => {
    // A fresh endpoint per run: every run deletes the one it is given.
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://hooks.example/iam',
    });
    const id = endpoint.id;
    // The delete counts the organization's live endpoints (no counter yet), as after an upgrade.
    await forgetCapCounters(world, 'webhookEndpoints');
    const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${id}`, {
      token: world.demo.personal_access_token,
    });
    return [step('delete', deleted, 204)];
  },
  isolation: ({ world, deletedEndpointId }) => ({
    ids: async () => [
      ['endpoint of another organization', world.demo.other_organization.webhook_endpoint_id],
      ['deleted endpoint', deletedEndpointId],
    ],
    send: (id) =>
      world.call('DELETE', `/v1/webhooks/endpoints/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'delete-webhook-endpoint',
      label: 'Delete Webhook Endpoint',
      status: 204,
      target: 3,
      prepare: async (world, i) => {
        const { endpoint } = await createWebhookEndpoint(world.admin, {
          organizationId: world.demo.organization_id,
          url: `https://hooks.bench.example/${i}`,
        });
        endpointsToDelete[i] = endpoint.id;
      },
      send: (world, i) =>
        world.call('delete-webhook-endpoint', 'DELETE', `/v1/webhooks/endpoints/${endpointsToDelete[i]}`, {
          token: world.demo.personal_access_token,
        }),
    },
    {
      key: 'delete-unknown',
      label: 'Delete Webhook Endpoint, unknown id (404)',
      status: 404,
      target: 2,
      send: (world) =>
        world.call('delete-webhook-endpoint', 'DELETE', `/v1/webhooks/endpoints/${UNKNOWN_ID}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
