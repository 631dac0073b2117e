import { AUTHORIZATION_QUERY } from '#test/bench/fixture.ts';
import { demoAuthorization } from '#test/bench/work-kit.ts';
import { authorizationQuery, key, step } from '#test/support/iam-kit.ts';
import { authorizationRequest, registered } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'consent',
  sam: {
    // Back to the client's redirect URI with a code and the request's state.
    check: (reply, expect) => {
      const location = new URL(reply.headers.get('location') as string);
      expect(`${location.origin}${location.pathname}`).toBe('https://app.example.com/callback');
      expect(location.searchParams.get('code')).toMatch(/^polar_ac_/);
      expect(location.searchParams.get('state')).toBe('bench');
    },
  },
  sample: {
    label: 'Consent (allow)',
    status: 303,
    body: { action: 'allow', ...Object.fromEntries(new URLSearchParams(AUTHORIZATION_QUERY)) },
  },
  iam: async (world) => {
    const allow = (key: string, token: string) =>
      world.call('POST', '/v1/oauth2/consent', {
        token,
        headers: { 'idempotency-key': key },
        body: {
          action: 'allow',
          ...Object.fromEntries(new URLSearchParams(authorizationQuery(world.demo.oauth_client.client_id))),
        },
      });
    const allowed = await allow(key('ok'), world.demo.personal_access_token);
    const replayed = await allow(key('ok'), world.demo.personal_access_token);
    // Refused by the service after the key is claimed: a token cannot delegate a scope it lacks.
    const refused = await allow(key('refused'), world.demo.personal_access_token_without_scopes);
    const retried = await allow(key('refused'), world.demo.personal_access_token_without_scopes);
    return [
      step('allow', allowed, 303),
      step('replay with the same key', replayed, 303, { reply: allowed, field: 'redirect_to' }),
      step('refused after claiming its key', refused, 403),
      step('retry of the refused request', retried, 403),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => [['organization the user is not in', world.demo.other_organization.organization_id]],
    send: async (id) => {
      consentClient ??= await registered(world.demo.personal_access_token);
      return world.call('POST', '/v1/oauth2/consent', {
        token: world.demo.personal_access_token,
        body: {
          action: 'allow',
          organization_id: id,
          ...Object.fromEntries(new URLSearchParams(authorizationRequest(consentClient.client_id))),
        },
      });
    },
  }),
  dynamoWork: [
    {
      key: 'consent',
      label: 'Consent (allow)',
      status: 303,
      target: 3,
      send: (world) =>
        world.call('consent', 'POST', '/v1/oauth2/consent', {
          token: world.demo.personal_access_token,
          body: { action: 'allow', ...Object.fromEntries(new URLSearchParams(demoAuthorization(world))) },
        }),
    },
  ],
});

let consentClient: { client_id: string } | undefined;
