import { CLIENT_ID, OTHER_REGISTRATION_TOKEN } from '#test/bench/fixture.ts';
import { freshRegistration, registrationCall, registrations } from '#test/bench/work-kit.ts';
import { forgetCapCounters, registerClient, step } from '#test/support/iam-kit.ts';
import { registrationRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'delete-client',
  sample: {
    // A delete succeeds once; repeated runs measure the path every later call takes: the client
    // read, the token refused.
    label: 'Delete Client (another client’s token, 401)',
    status: 401,
    params: { client_id: CLIENT_ID },
    token: OTHER_REGISTRATION_TOKEN,
  },
  iam: async (world) => {
    const client = await registerClient(world);
    // The delete counts the user's live clients (no counter yet), as after an upgrade.
    await forgetCapCounters(world, 'oauthClients');
    const deleted = await world.call('DELETE', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
    });
    return [step('delete its registration', deleted, 204)];
  },
  isolation: () => registrationRow('DELETE'),
  dynamoWork: [
    {
      key: 'delete-client',
      label: 'Delete Client (RFC 7592)',
      status: 204,
      target: 2,
      prepare: async (world, i) => {
        registrations[i] = await freshRegistration(world);
      },
      send: (world, i) => registrationCall(world, 'delete-client', 'DELETE', i),
    },
  ],
});
