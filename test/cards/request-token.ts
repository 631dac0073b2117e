import { codes, demoCode } from '#test/bench/work-kit.ts';
import { registrant, step } from '#test/support/iam-kit.ts';
import {
  authorizationCode,
  issueTokens,
  pkce,
  REDIRECT_URI,
  type RegisteredClient,
  registerClient as registerOAuthClient,
  tokenRequest,
} from '#test/support/oauth.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'request-token',
  sample: {
    // A refresh succeeds once per token; repeated runs measure what every refused one costs: the
    // client authenticated, the token read.
    label: 'Request Token (unknown refresh token, 400)',
    status: 400,
    form: { grant_type: 'refresh_token', refresh_token: `polar_rt_o_${'H'.repeat(48)}` },
  },
  iam: async (world) => {
    const client = await registerOAuthClient(world.call, await registrant(world));
    const exchange = async (verifier?: string) => {
      const { verifier: real, challenge } = pkce();
      const code = await authorizationCode(world.call, world.demo.personal_access_token, client, {
        challenge,
      });
      return tokenRequest(world.call, client, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier ?? real,
        redirect_uri: REDIRECT_URI,
      });
    };
    const refresh = (refreshToken: string) =>
      tokenRequest(world.call, client, { grant_type: 'refresh_token', refresh_token: refreshToken });
    const issued = await exchange();
    const rotated = await refresh(issued.body?.refresh_token);
    // The replaced refresh token again: its family is revoked.
    const replayed = await refresh(issued.body?.refresh_token);
    const afterReplay = await refresh(rotated.body?.refresh_token);
    // A wrong verifier spends the code.
    const guessed = await exchange(pkce().verifier);
    return [
      step('exchange a code', issued, 200),
      step('refresh (rotation)', rotated, 200),
      step('replay the replaced refresh token', replayed, 400),
      step('the family is revoked: its current refresh token too', afterReplay, 400),
      step('a wrong code_verifier', guessed, 400),
    ];
  },
  isolation: ({ world }) => ({
    // Refresh tokens are a client's own: another client's, presented with this client's credentials,
    // is answered as an unknown one (codes: test/integration/oauth-token.test.ts).
    ids: async () => {
      const pat = world.demo.personal_access_token;
      const otherPat = world.demo.other_organization.personal_access_token;
      const sibling = await registerOAuthClient(world.call, pat);
      const foreign = await registerOAuthClient(world.call, otherPat);
      return [
        [
          'refresh token of another client of the same user',
          (await issueTokens(world.call, pat, sibling)).refresh_token as string,
        ],
        [
          "refresh token of another user's client",
          (await issueTokens(world.call, otherPat, foreign)).refresh_token as string,
        ],
      ];
    },
    send: async (id) => {
      tokenClient ??= await registerOAuthClient(world.call, world.demo.personal_access_token);
      return tokenRequest(world.call, tokenClient, { grant_type: 'refresh_token', refresh_token: id });
    },
  }),
  dynamoWork: [
    {
      key: 'request-token',
      label: 'Request Token (code exchange)',
      status: 200,
      target: 3,
      // The consent that issues each code is prepared outside the measured request.
      prepare: async (world, i) => {
        codes[i] = await demoCode(world, i);
      },
      send: (world, i) =>
        world.call('request-token', 'POST', '/v1/oauth2/token', {
          form: {
            grant_type: 'authorization_code',
            code: codes[i]?.code as string,
            code_verifier: codes[i]?.verifier as string,
            redirect_uri: 'http://127.0.0.1:8080/callback',
            client_id: world.demo.oauth_client.client_id,
            client_secret: world.demo.oauth_client.client_secret,
          },
        }),
    },
  ],
});

let tokenClient: RegisteredClient | undefined;
