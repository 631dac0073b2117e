import { CLIENT_ID, CLIENT_REGISTRATION } from '#test/bench/fixture.ts';
import { freshRegistration, registrationCall, registrations } from '#test/bench/work-kit.ts';
import { registerClient, step } from '#test/support/iam-kit.ts';
import { registrationRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'update-client',
  sample: {
    label: 'Update Client (RFC 7592)',
    status: 200,
    params: { client_id: CLIENT_ID },
    body: { ...CLIENT_REGISTRATION, client_id: CLIENT_ID },
  },
  iam: async (world) => {
    const client = await registerClient(world);
    const replaced = await world.call('PUT', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
      body: {
        client_id: client.client_id,
        client_name: 'IAM renamed',
        redirect_uris: ['https://app.example.com/cb'],
      },
    });
    return [step('replace its registration', replaced, 200)];
  },
  isolation: () => registrationRow('PUT'),
  dynamoWork: [
    {
      key: 'update-client',
      label: 'Update Client (RFC 7592)',
      status: 200,
      target: 2,
      prepare: async (world, i) => {
        registrations[i] = await freshRegistration(world);
      },
      send: (world, i) => registrationCall(world, 'update-client', 'PUT', i),
    },
  ],
});
