import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-webhook-endpoints',
  sample: {
    label: 'List Webhook Endpoints',
    status: 200,
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/webhooks/endpoints${query}`, { token: world.demo.personal_access_token });
    return [
      step('newest first', await list('?limit=2'), 200),
      step('by name, then url', await list('?sorting=-name&sorting=url'), 200),
      step('past the end (counts only)', await list('?page=50'), 200),
    ];
  },
  isolation: {
    namesNoResource:
      "lists the caller's organizations only; an organization_id of another organization matches nothing (webhook-endpoints.test.ts)",
  },
  dynamoWork: [
    {
      key: 'list-webhook-endpoints',
      label: 'List Webhook Endpoints (page 1)',
      status: 200,
      target: 3,
      send: (world) =>
        world.call('list-webhook-endpoints', 'GET', '/v1/webhooks/endpoints?limit=10', {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
