import { UNKNOWN_ACCESS_TOKEN } from '#test/bench/fixture.ts';
import { demoClient } from '#test/bench/work-kit.ts';
import { registrant, step } from '#test/support/iam-kit.ts';
import { clientTokenRow } from '#test/support/isolation-kit.ts';
import { clientRequest, issueTokens, registerClient as registerOAuthClient } from '#test/support/oauth.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'introspect-token',
  sam: {
    // A token never issued is inactive, and nothing else is said (RFC 7662 §2.2).
    check: (reply, expect) => expect(reply.body).toEqual({ active: false }),
  },
  sample: {
    label: 'Introspect Token (unknown token, inactive)',
    status: 200,
    form: { token: UNKNOWN_ACCESS_TOKEN },
  },
  iam: async (world) => {
    const client = await registerOAuthClient(world.call, await registrant(world));
    const tokens = await issueTokens(world.call, world.demo.personal_access_token, client);
    const reply = await world.call(
      'POST',
      '/v1/oauth2/introspect',
      clientRequest(client, { token: tokens.access_token }),
    );
    return [step('an active access token', reply, 200)];
  },
  isolation: () => clientTokenRow('/v1/oauth2/introspect', { active: false }),
  dynamoWork: [
    {
      key: 'introspect-token',
      label: 'Introspect Token (an active access token)',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('introspect-token', 'POST', '/v1/oauth2/introspect', {
          form: { token: world.demo.oauth_tokens.access_token, ...demoClient(world) },
        }),
    },
  ],
});
