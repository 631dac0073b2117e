import { expect } from 'vitest';
import { AUTHORIZATION_QUERY } from '#test/bench/fixture.ts';
import { demoAuthorization } from '#test/bench/work-kit.ts';
import { authorizationQuery, step } from '#test/support/iam-kit.ts';
import { authorizationRequest, registered } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'authorize',
  sample: {
    label: 'Authorize',
    status: 200,
    query: AUTHORIZATION_QUERY,
  },
  iam: async (world) => {
    const client = world.demo.oauth_client.client_id;
    const ask = (clientId: string) =>
      world.call('GET', `/v1/oauth2/authorize?${authorizationQuery(clientId)}`, {
        token: world.demo.personal_access_token,
      });
    return [
      step('a valid request', await ask(client), 200),
      step('an unknown client', await ask(`polar_ci_${'Q'.repeat(48)}`), 400),
    ];
  },
  isolation: ({ world }) => ({
    // Clients are applications any user may authorize: the id to keep from confirming is a deleted one.
    ids: async () => {
      const deleted = await registered(world.demo.personal_access_token);
      const removed = await world.call('DELETE', `/v1/oauth2/register/${deleted.client_id}`, {
        token: deleted.registration_access_token,
      });
      expect(removed.status).toBe(204);
      return [['deleted client', deleted.client_id]];
    },
    send: (id) =>
      world.call('GET', `/v1/oauth2/authorize?${authorizationRequest(id)}`, {
        token: world.demo.personal_access_token,
      }),
  }),
  dynamoWork: [
    {
      key: 'authorize',
      label: 'Authorize (the demo client)',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('authorize', 'GET', `/v1/oauth2/authorize?${demoAuthorization(world)}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
