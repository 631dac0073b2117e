import { benchRun, createClient, roomForClients } from '#test/bench/work-kit.ts';
import { forgetCapCounters, key, registrant, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'create-client',
  sam: {
    // A registration answer is never cacheable (RFC 7591 §3.2), and shows its secret once.
    check: (reply, expect) => {
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(reply.body).toMatchObject({
        client_id: expect.stringMatching(/^polar_ci_/),
        client_secret: expect.stringMatching(/^polar_cs_/),
        client_name: 'Bench',
      });
    },
  },
  sample: {
    label: 'Create Client',
    status: 201,
    body: { client_name: 'Bench', redirect_uris: ['https://app.example.com/callback'] },
  },
  iam: async (world) => {
    // The first registration counts the user's live clients (no counter yet), as after an upgrade.
    const pat = await registrant(world);
    await forgetCapCounters(world, 'oauthClients');
    const register = (key: string, redirect: string) =>
      world.call('POST', '/v1/oauth2/register', {
        token: pat,
        headers: { 'idempotency-key': key },
        body: { client_name: 'IAM scenario', redirect_uris: [redirect] },
      });
    const created = await register(key('ok'), 'https://app.example.com/callback');
    const replayed = await register(key('ok'), 'https://app.example.com/callback');
    // Refused by the service after the key is claimed: the claim is released, so the retry runs again.
    const refused = await register(key('refused'), 'http://app.example.com/callback');
    const retried = await register(key('refused'), 'http://app.example.com/callback');
    return [
      step('register', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'client_id' }),
      step('refused after claiming its key', refused, 400),
      step('retry of the refused request', retried, 400),
    ];
  },
  isolation: { namesNoResource: 'a registration refers to no resource of an organization' },
  dynamoWork: [
    {
      key: 'create-client',
      label: 'Create Client',
      status: 201,
      target: 2,
      prepare: roomForClients,
      send: (world) => createClient(world),
    },
    {
      key: 'create-client+key',
      label: 'Create Client + Idempotency-Key (first use)',
      status: 201,
      target: 4,
      prepare: roomForClients,
      send: (world, i) => createClient(world, `bench-${benchRun}-cc-${i}`),
    },
    {
      key: 'create-client+replay',
      label: 'Create Client + Idempotency-Key (replay)',
      status: 201,
      target: 4,
      prepare: async (world, i) => {
        await roomForClients(world);
        return createClient(world, `bench-${benchRun}-ccr-${i}`);
      },
      send: (world, i) => createClient(world, `bench-${benchRun}-ccr-${i}`),
    },
  ],
});
