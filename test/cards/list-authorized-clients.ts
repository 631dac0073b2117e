import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-authorized-clients',
  sample: {
    label: 'List Authorized Clients',
    status: 200,
  },
  iam: async (world) => [
    // The demo user authorized the demo client (the seed's consent and exchange): its grant and client read.
    step(
      "the demo user's applications",
      await world.call('GET', '/v1/oauth2/authorized-clients', { token: world.demo.personal_access_token }),
      200,
    ),
  ],
  isolation: {
    namesNoResource:
      "lists the caller's own grants only, read under the caller's user key (token-lifecycle.test.ts: another user's list is empty)",
  },
  dynamoWork: [
    {
      key: 'list-authorized-clients',
      label: 'List Authorized Clients (the demo client)',
      status: 200,
      // The token, the user's grants (one Query of GSI1), their clients (one BatchGetItem).
      target: 3,
      send: (world) =>
        world.call('list-authorized-clients', 'GET', '/v1/oauth2/authorized-clients', {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
