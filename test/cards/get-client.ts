import { CLIENT_ID } from '#test/bench/fixture.ts';
import { freshRegistration, registrationCall, registrations } from '#test/bench/work-kit.ts';
import { registerClient, step } from '#test/support/iam-kit.ts';
import { registrationRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-client',
  sam: {
    // The registration without its secret.
    check: (reply, expect) => {
      expect(reply.body).toMatchObject({ client_id: CLIENT_ID, client_name: 'Bench client' });
      expect(reply.text).not.toContain('polar_cs_');
    },
  },
  sample: {
    label: 'Get Client (RFC 7592)',
    status: 200,
    params: { client_id: CLIENT_ID },
  },
  iam: async (world) => {
    const client = await registerClient(world);
    const read = await world.call('GET', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
    });
    return [step('its registration', read, 200)];
  },
  isolation: () => registrationRow('GET'),
  dynamoWork: [
    {
      key: 'get-client',
      label: 'Get Client (RFC 7592)',
      status: 200,
      target: 1,
      prepare: async (world, i) => {
        registrations[i] = await freshRegistration(world);
      },
      send: (world, i) => registrationCall(world, 'get-client', 'GET', i),
    },
  ],
});
