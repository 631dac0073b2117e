import { UNKNOWN_ACCESS_TOKEN } from '#test/bench/fixture.ts';
import { demoClient, demoTokens, families } from '#test/bench/work-kit.ts';
import { registrant, step } from '#test/support/iam-kit.ts';
import { clientTokenRow } from '#test/support/isolation-kit.ts';
import { clientRequest, issueTokens, registerClient as registerOAuthClient } from '#test/support/oauth.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'revoke-token',
  // RFC 7009: an unknown token is answered 200 and changes nothing.
  sam: { writes: false },
  sample: {
    label: 'Revoke Token (unknown token, 200)',
    status: 200,
    form: { token: UNKNOWN_ACCESS_TOKEN },
  },
  iam: async (world) => {
    const client = await registerOAuthClient(world.call, await registrant(world));
    const first = await issueTokens(world.call, world.demo.personal_access_token, client);
    const second = await issueTokens(world.call, world.demo.personal_access_token, client);
    const revoke = (token: string) =>
      world.call('POST', '/v1/oauth2/revoke', clientRequest(client, { token }));
    return [
      step('an access token, alone', await revoke(first.access_token), 200),
      step('a refresh token, with its grant', await revoke(second.refresh_token as string), 200),
    ];
  },
  isolation: () => clientTokenRow('/v1/oauth2/revoke', {}),
  dynamoWork: [
    {
      key: 'revoke-token',
      label: 'Revoke Token (an access token)',
      status: 200,
      target: 3,
      // A fresh family per repetition, issued outside the measured request.
      prepare: async (world, i) => {
        families[i] = await demoTokens(world, i);
      },
      send: (world, i) =>
        world.call('revoke-token', 'POST', '/v1/oauth2/revoke', {
          form: { token: families[i]?.access_token as string, ...demoClient(world) },
        }),
    },
  ],
});
