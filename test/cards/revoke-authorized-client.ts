import { registrant, step } from '#test/support/iam-kit.ts';
import { issueTokens, registerClient } from '#test/support/oauth.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'revoke-authorized-client',
  sample: {
    label: 'Revoke Authorized Client (a client never authorized, 404)',
    status: 404,
    params: { client_id: `polar_ci_${'Q'.repeat(48)}` },
  },
  iam: async (world) => {
    const pat = world.demo.personal_access_token;
    // A client of its own, so that revoking it ends no grant another scenario uses.
    const client = await registerClient(world.call, await registrant(world));
    await issueTokens(world.call, pat, client);
    const revoke = (clientId: string) =>
      world.call('DELETE', `/v1/oauth2/authorized-clients/${clientId}`, { token: pat });
    return [
      step('a client the user authorized: its grant and tokens revoked', await revoke(client.client_id), 204),
      step('a client the user never authorized', await revoke(`polar_ci_${'Q'.repeat(48)}`), 404),
    ];
  },
  isolation: ({ world }) => ({
    // A client another user authorized (and the caller did not) is answered as one never authorized.
    ids: async () => {
      const other = world.demo.other_organization.personal_access_token;
      const client = await registerClient(world.call, other);
      await issueTokens(world.call, other, client);
      return [['client another user authorized', client.client_id]];
    },
    send: (id) =>
      world.call('DELETE', `/v1/oauth2/authorized-clients/${id}`, {
        token: world.demo.personal_access_token,
      }),
  }),
  dynamoWork: [
    {
      key: 'revoke-authorized-client',
      label: 'Revoke Authorized Client (never authorized, 404)',
      status: 404,
      // The token and the user's grants (one Query of GSI1); a revocation adds, per grant, its read and one transaction.
      target: 2,
      send: (world) =>
        world.call(
          'revoke-authorized-client',
          'DELETE',
          `/v1/oauth2/authorized-clients/polar_ci_${'Q'.repeat(48)}`,
          {
            token: world.demo.personal_access_token,
          },
        ),
    },
  ],
});
