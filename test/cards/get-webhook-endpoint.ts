import { randomUUID } from 'node:crypto';
import { WEBHOOK } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { endpointRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-webhook-endpoint',
  sam: {
    // Its secret opened with the key set read from Secrets Manager: the one the fixture sealed.
    check: (reply, expect) =>
      expect(reply.body).toMatchObject({
        id: WEBHOOK,
        secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
      }),
  },
  sample: {
    label: 'Get Webhook Endpoint',
    status: 200,
    params: { id: WEBHOOK },
  },
  iam: async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/webhooks/endpoints/${id}`, { token: world.demo.personal_access_token });
    return [
      step('an endpoint', await get(world.demo.webhook_endpoint_ids[1] as string), 200),
      step('an unknown endpoint', await get(randomUUID()), 404),
    ];
  },
  isolation: () => endpointRow('GET'),
  dynamoWork: [
    {
      key: 'get-webhook-endpoint',
      label: 'Get Webhook Endpoint',
      status: 200,
      target: 2,
      send: (world) =>
        world.call(
          'get-webhook-endpoint',
          'GET',
          `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}`,
          {
            token: world.demo.personal_access_token,
          },
        ),
    },
  ],
});
