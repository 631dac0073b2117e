import { forgetCapCounters, key, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'create-webhook-endpoint',
  sam: {
    // Its signing secret sealed and opened with the key set read from Secrets Manager.
    check: (reply, expect) =>
      expect(reply.body).toMatchObject({
        url: 'https://hooks.example.com/bench',
        secret: expect.stringMatching(/^whsec_/),
      }),
  },
  sample: {
    label: 'Create Webhook Endpoint',
    status: 201,
    body: { url: 'https://hooks.example.com/bench', format: 'raw', events: ['customer.created'] },
  },
  iam: async (world) => {
    // The first create counts the organization's live endpoints (no counter yet), as after an upgrade.
    await forgetCapCounters(world, 'webhookEndpoints');
    const create = (idempotencyKey: string, url: string) =>
      world.call('POST', '/v1/webhooks/endpoints', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': idempotencyKey },
        body: { url, format: 'raw', events: ['customer.created'] },
      });
    const created = await create(key('hook'), 'https://hooks.example.com/iam');
    const replayed = await create(key('hook'), 'https://hooks.example.com/iam');
    // Refused by the service after the key is claimed: the claim is released, so the retry runs again.
    const refused = await create(key('private'), 'https://10.0.0.1/iam');
    const retried = await create(key('private'), 'https://10.0.0.1/iam');
    return [
      step('create', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'secret' }),
      step('a private address, refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  isolation: {
    namesNoResource:
      'a new endpoint names no existing resource; a foreign organization_id is refused as an unknown one (webhook-endpoints.test.ts)',
  },
  dynamoWork: [
    {
      key: 'create-webhook-endpoint',
      label: 'Create Webhook Endpoint',
      status: 201,
      target: 2,
      send: (world, i) =>
        world.call('create-webhook-endpoint', 'POST', '/v1/webhooks/endpoints', {
          token: world.demo.personal_access_token,
          body: { url: `https://hooks.bench.example/new/${i}`, format: 'raw', events: ['customer.created'] },
        }),
    },
  ],
});
