/**
 * The token endpoint: client authentication by the registered method, the authorization_code grant
 * with PKCE and the refresh_token grant with rotation and replay detection, every RFC 6749 error in
 * its form, against DynamoDB Local under the function's deployed policy.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/data/table.ts';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS } from '#shared/domain/oauth.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import {
  authorizationCode,
  clientRequest,
  expireItem,
  issueTokens,
  pkce,
  REDIRECT_URI,
  type RegisteredClient,
  registerClient,
  tokenRequest,
} from '../support/oauth.ts';
import { digestChanges, tableDigest } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
let confidential: RegisteredClient;
beforeAll(async () => {
  world = await createWorld('oauth-token');
  confidential = await register({ token_endpoint_auth_method: 'client_secret_basic' });
});
afterAll(() => world?.drop());

const register = (metadata: Record<string, unknown> = {}) =>
  registerClient(world.call, world.demo.personal_access_token, metadata);
const token = (client: RegisteredClient, parameters: Record<string, string>) =>
  tokenRequest(world.call, client, parameters);

const get = async (key: { PK: string; SK: string }) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
    )
  ).Item;
const storedToken = (secret: string) => get(keys.token(hashSecret(secret)));

async function code(
  client: RegisteredClient,
  options: { scope?: string; redirect_uri?: string | null } = {},
) {
  const { verifier, challenge } = pkce();
  return {
    code: await authorizationCode(world.call, world.demo.personal_access_token, client, {
      challenge,
      ...options,
    }),
    verifier,
  };
}

const exchange = (
  client: RegisteredClient,
  c: { code: string; verifier: string },
  extra: Record<string, string> = {},
) =>
  token(client, {
    grant_type: 'authorization_code',
    code: c.code,
    code_verifier: c.verifier,
    redirect_uri: REDIRECT_URI,
    ...extra,
  });

function expectNoStore(reply: Reply): void {
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(reply.headers.pragma).toBe('no-cache');
}

function expectError(reply: Reply, status: number, error: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.body).toEqual({ error, error_description: expect.any(String) });
  expectNoStore(reply);
  if (status === 401) expect(reply.headers['www-authenticate']).toBe('Basic realm="polar"');
}

describe('the authorization_code grant', () => {
  it.each(['client_secret_basic', 'client_secret_post', 'none'] as const)(
    '%s: tokens for the consented subject and scope, stored only as hashes; 3 round trips',
    async (method) => {
      const client =
        method === 'client_secret_basic'
          ? confidential
          : await register({ token_endpoint_auth_method: method });
      const c = await code(client);
      world.resetCount();
      const reply = await exchange(client, c);
      expect(world.roundTrips()).toBe(3);
      expect(reply.status).toBe(200);
      expectNoStore(reply);
      const clientPart = client.client_id.slice('polar_ci_'.length);
      expect(reply.body).toEqual({
        access_token: expect.stringMatching(
          new RegExp(`^polar_at_o_[A-Za-z0-9]{48}_${clientPart}_[0-9a-f-]{36}$`),
        ),
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_TTL_SECONDS,
        refresh_token: expect.stringMatching(/^polar_rt_o_[A-Za-z0-9]{48}$/),
        scope: 'openid email products:read',
        // The grant has openid: an ID Token (its claims: test/integration/oidc.test.ts).
        id_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      });
      const access = await storedToken(reply.body.access_token);
      const refresh = await storedToken(reply.body.refresh_token);
      for (const item of [access, refresh]) {
        expect(JSON.stringify(item)).not.toContain(reply.body.access_token);
        expect(JSON.stringify(item)).not.toContain(reply.body.refresh_token);
      }
      expect(access).toMatchObject({
        kind: 'oauth_access_token',
        client_id: client.client_id,
        sub_type: 'organization',
        organization_ids: [world.demo.organization_id],
        scope: 'openid email products:read',
        revoked_at: null,
      });
      expect((Date.parse(access?.expires_at) - Date.parse(access?.created_at)) / 1000).toBe(
        ACCESS_TOKEN_TTL_SECONDS,
      );
      expect(refresh).toMatchObject({
        kind: 'oauth_refresh_token',
        grant_id: access?.grant_id,
        rotated_at: null,
      });
      expect((Date.parse(refresh?.expires_at) - Date.parse(refresh?.created_at)) / 1000).toBe(
        REFRESH_TOKEN_TTL_SECONDS,
      );
      expect(await get(keys.oauthGrant(access?.grant_id))).toMatchObject({
        access_token_hash: hashSecret(reply.body.access_token),
        refresh_token_hash: hashSecret(reply.body.refresh_token),
        revoked_at: null,
      });
      expect(await get(keys.authorizationCode(hashSecret(c.code)))).toBeUndefined();
      expect(await get(keys.oauthClientLive(client.client_id))).toMatchObject({
        client_id: client.client_id,
      });
    },
  );

  it('a client acting for users gets user tokens; one without the refresh_token grant no refresh token', async () => {
    const users = await register({ default_sub_type: 'user' });
    expect((await issueTokens(world.call, world.demo.personal_access_token, users)).access_token).toMatch(
      /^polar_at_u_/,
    );
    const noRefresh = await register({ grant_types: ['authorization_code'] });
    const tokens = await issueTokens(world.call, world.demo.personal_access_token, noRefresh);
    expect(tokens).not.toHaveProperty('refresh_token');
    const refreshed = await token(noRefresh, {
      grant_type: 'refresh_token',
      refresh_token: `polar_rt_o_${'A'.repeat(48)}`,
    });
    expectError(refreshed, 400, 'unauthorized_client');
  });

  it('redirect_uri: required when the authorization request named it, optional when it did not', async () => {
    const named = await code(confidential);
    const without = { grant_type: 'authorization_code', code: named.code, code_verifier: named.verifier };
    expectError(await token(confidential, without), 400, 'invalid_grant');
    const unnamed = await code(confidential, { redirect_uri: null });
    expect(
      (
        await token(confidential, {
          grant_type: 'authorization_code',
          code: unnamed.code,
          code_verifier: unnamed.verifier,
        })
      ).status,
    ).toBe(200);
  });

  describe('a code that does not qualify is invalid_grant and changes nothing', () => {
    it.each<[string, (c: { code: string; verifier: string }, other: RegisteredClient) => Promise<Reply>]>([
      ['another client', (c, other) => exchange(other, c)],
      [
        'another redirect URI',
        (c) => exchange(confidential, c, { redirect_uri: 'https://app.example/other' }),
      ],
      ['an unknown code', (c) => exchange(confidential, { ...c, code: `polar_ac_${'Z'.repeat(48)}` })],
      ['a code of another shape', (c) => exchange(confidential, { ...c, code: 'abc' })],
    ])('%s', async (_, send) => {
      const other = await register({ token_endpoint_auth_method: 'client_secret_post' });
      const c = await code(confidential);
      const before = await tableDigest(world.table);
      expectError(await send(c, other), 400, 'invalid_grant');
      expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
      // …and the code still works for its own client, with its own redirect URI.
      expect((await exchange(confidential, c)).status).toBe(200);
    });

    it("another client's code is answered exactly as an unknown one", async () => {
      const other = await register({ token_endpoint_auth_method: 'client_secret_post' });
      const c = await code(confidential);
      const foreign = await exchange(other, c);
      const unknown = await exchange(other, { ...c, code: `polar_ac_${'U'.repeat(48)}` });
      expect(foreign).toEqual(unknown);
    });

    it('used twice: the second is refused and the first tokens stay valid', async () => {
      const c = await code(confidential);
      const first = await exchange(confidential, c);
      expect(first.status).toBe(200);
      const before = await tableDigest(world.table);
      expectError(await exchange(confidential, c), 400, 'invalid_grant');
      expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
      expect((await storedToken(first.body.access_token))?.revoked_at).toBeNull();
    });

    it('expired', async () => {
      const c = await code(confidential);
      await expireItem(world.table, keys.authorizationCode(hashSecret(c.code)));
      const before = await tableDigest(world.table);
      expectError(await exchange(confidential, c), 400, 'invalid_grant');
      expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
    });
  });

  it('a wrong code_verifier is invalid_grant and spends the code: one guess per code', async () => {
    const c = await code(confidential);
    expectError(await exchange(confidential, { ...c, verifier: pkce().verifier }), 400, 'invalid_grant');
    expect(await get(keys.authorizationCode(hashSecret(c.code)))).toBeUndefined();
    expectError(await exchange(confidential, c), 400, 'invalid_grant');
  });

  it('missing code or code_verifier is invalid_request, and reads nothing', async () => {
    const c = await code(confidential);
    world.resetCount();
    expectError(
      await token(confidential, { grant_type: 'authorization_code', code: c.code }),
      400,
      'invalid_request',
    );
    expectError(
      await token(confidential, { grant_type: 'authorization_code', code_verifier: c.verifier }),
      400,
      'invalid_request',
    );
    // Only the client authentication read.
    expect(world.roundTrips()).toBe(2);
    expect((await exchange(confidential, c)).status).toBe(200);
  });

  it('concurrent exchanges of one code: exactly one gets tokens', async () => {
    const c = await code(confidential);
    const replies = await Promise.all(Array.from({ length: 6 }, () => exchange(confidential, c)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 200)) expectError(reply, 400, 'invalid_grant');
  });
});

describe('the refresh_token grant', () => {
  const refresh = (refreshToken: string, extra: Record<string, string> = {}) =>
    token(confidential, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });

  it('rotates: new tokens, the old refresh token marked replaced and the old access token ended; 3 round trips', async () => {
    const first = await issueTokens(world.call, world.demo.personal_access_token, confidential);
    world.resetCount();
    const reply = await refresh(first.refresh_token as string);
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(200);
    expectNoStore(reply);
    expect(reply.body.refresh_token).not.toBe(first.refresh_token);
    expect(reply.body.access_token).not.toBe(first.access_token);
    expect(reply.body.scope).toBe(first.scope);
    expect((await storedToken(first.refresh_token as string))?.rotated_at).toEqual(expect.any(String));
    expect((await storedToken(first.access_token))?.revoked_at).toEqual(expect.any(String));
    const current = await storedToken(reply.body.access_token);
    expect(await get(keys.oauthGrant(current?.grant_id))).toMatchObject({
      access_token_hash: hashSecret(reply.body.access_token),
      refresh_token_hash: hashSecret(reply.body.refresh_token),
      rotations: 1,
    });
  });

  it('scope: may narrow the access token (the refresh token keeps the grant), never widen', async () => {
    const first = await issueTokens(world.call, world.demo.personal_access_token, confidential);
    expectError(
      await refresh(first.refresh_token as string, { scope: 'openid webhooks:write' }),
      400,
      'invalid_scope',
    );
    const narrowed = await refresh(first.refresh_token as string, { scope: 'openid' });
    expect(narrowed.body.scope).toBe('openid');
    expect((await storedToken(narrowed.body.refresh_token))?.scope).toBe('openid email products:read');
    expect((await refresh(narrowed.body.refresh_token)).body.scope).toBe('openid email products:read');
  });

  it('a replayed refresh token is invalid_grant and revokes the whole family', async () => {
    const first = await issueTokens(world.call, world.demo.personal_access_token, confidential);
    const second = await refresh(first.refresh_token as string);
    const third = await refresh(second.body.refresh_token);
    expect(third.status).toBe(200);
    expectError(await refresh(first.refresh_token as string), 400, 'invalid_grant');
    for (const secret of [third.body.access_token, third.body.refresh_token]) {
      expect((await storedToken(secret))?.revoked_at).toEqual(expect.any(String));
    }
    const current = await storedToken(third.body.access_token);
    expect((await get(keys.oauthGrant(current?.grant_id)))?.revoked_at).toEqual(expect.any(String));
    expectError(await refresh(third.body.refresh_token), 400, 'invalid_grant');
  });

  it("another client's refresh token, an unknown one, an access token: invalid_grant, nothing changes", async () => {
    const other = await register({ token_endpoint_auth_method: 'client_secret_post' });
    const theirs = await issueTokens(world.call, world.demo.personal_access_token, other);
    const before = await tableDigest(world.table);
    for (const presented of [
      theirs.refresh_token as string,
      `polar_rt_o_${'Q'.repeat(48)}`,
      theirs.access_token,
      'x',
    ]) {
      expectError(await refresh(presented), 400, 'invalid_grant');
    }
    expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
    expect(
      (await token(other, { grant_type: 'refresh_token', refresh_token: theirs.refresh_token as string }))
        .status,
    ).toBe(200);
  });

  it('concurrent refreshes with one token: exactly one succeeds; a later one is a replay and ends the family', async () => {
    const first = await issueTokens(world.call, world.demo.personal_access_token, confidential);
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => refresh(first.refresh_token as string)),
    );
    const won = replies.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    const lost = replies.filter((r) => r.status !== 200);
    for (const reply of lost) expectError(reply, 400, 'invalid_grant');
    // A request that read the token before the winner committed lost the race (the family stays);
    // one that read it after found it replaced: a replay, which ends the family.
    const replayed = lost.some((r) => /already used/.test(r.body.error_description));
    const winner = await storedToken(won[0]?.body.access_token);
    expect(winner?.revoked_at === null).toBe(!replayed);
  });
});

describe('client authentication (RFC 6749 §2.3): 401 invalid_client with a Basic challenge', () => {
  const form = { grant_type: 'refresh_token', refresh_token: `polar_rt_o_${'A'.repeat(48)}` };
  const send = (headers: Record<string, string>, body: Record<string, string>) =>
    world.call('POST', '/v1/oauth2/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(body).toString(),
    });

  it.each<[string, () => { headers: Record<string, string>; body: Record<string, string> }]>([
    ['no authentication', () => ({ headers: {}, body: form })],
    ['a wrong secret', () => withBasic(confidential.client_id, `polar_cs_${'W'.repeat(48)}`)],
    [
      'an unknown client',
      () => withBasic(`polar_ci_${'W'.repeat(48)}`, confidential.client_secret as string),
    ],
    [
      'a Basic client authenticating in the form',
      () => ({
        headers: {},
        body: {
          ...form,
          client_id: confidential.client_id,
          client_secret: confidential.client_secret as string,
        },
      }),
    ],
    [
      'a Basic client sending its id alone',
      () => ({ headers: {}, body: { ...form, client_id: confidential.client_id } }),
    ],
    [
      'a bearer token',
      () => ({ headers: { authorization: `Bearer ${world.demo.personal_access_token}` }, body: form }),
    ],
    [
      'Basic that is not base64 of id:secret',
      () => ({ headers: { authorization: 'Basic !!!' }, body: form }),
    ],
  ])('%s', async (_, build) => {
    const { headers, body } = build();
    expectError(await send(headers, body), 401, 'invalid_client');
  });

  function withBasic(id: string, secret: string) {
    return {
      body: form,
      headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` },
    };
  }

  it('Basic credentials are form-encoded (RFC 6749 §2.3.1) and checked', async () => {
    const reply = await send(
      withBasic(confidential.client_id, confidential.client_secret as string).headers,
      form,
    );
    // Authenticated: the refresh token, not the client, is the fault.
    expectError(reply, 400, 'invalid_grant');
    const wrong = await send(withBasic(confidential.client_id, `polar_cs_${'W'.repeat(48)}`).headers, form);
    expectError(wrong, 401, 'invalid_client');
  });

  it('a deleted client is refused', async () => {
    const client = await register({ token_endpoint_auth_method: 'client_secret_post' });
    const removed = await world.call('DELETE', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
    });
    expect(removed.status).toBe(204);
    expectError(await token(client, form), 401, 'invalid_client');
  });

  it('two methods at once is a malformed request', async () => {
    const options = clientRequest(confidential, {
      ...form,
      client_secret: confidential.client_secret as string,
    });
    const reply = await world.call('POST', '/v1/oauth2/token', options);
    expectError(reply, 400, 'invalid_request');
  });
});

describe('the form itself', () => {
  const send = (body: string | Buffer, contentType = 'application/x-www-form-urlencoded', base64 = false) =>
    world.call('POST', '/v1/oauth2/token', {
      headers: { 'content-type': contentType },
      body,
      base64,
    });
  const auth = () => `client_id=${confidential.client_id}`;

  it.each([
    ['JSON', 'application/json', 415],
    ['no type', '', 415],
    ['another charset', 'application/x-www-form-urlencoded; charset=latin1', 415],
  ] as const)('%s → %s invalid_request', async (_, type, status) => {
    expectError(await send('grant_type=refresh_token', type), status, 'invalid_request');
  });

  it.each([
    ['a repeated parameter', () => `grant_type=refresh_token&grant_type=refresh_token&${auth()}`],
    ['a malformed escape', () => `grant_type=refresh%zz&${auth()}`],
    ['an escape that is not UTF-8', () => `grant_type=%ff&${auth()}`],
  ])('%s → 400 invalid_request, before the client is read', async (_, body) => {
    world.resetCount();
    expectError(await send(body()), 400, 'invalid_request');
    expect(world.roundTrips()).toBe(0);
  });

  it('a parameter over its length → 400 invalid_request naming it', async () => {
    const reply = await send(
      `grant_type=${'x'.repeat(65)}&${auth()}&client_secret=${confidential.client_secret}`,
    );
    expect(reply.status).toBe(401);
    const authenticated = clientRequest(confidential, { grant_type: 'x'.repeat(65) });
    const long = await world.call('POST', '/v1/oauth2/token', authenticated);
    expectError(long, 400, 'invalid_request');
    expect(long.body.error_description).toContain('grant_type');
  });

  it('a body over 1 MiB → 413 invalid_request', async () => {
    expectError(await send(`x=${'a'.repeat(1024 * 1024)}`), 413, 'invalid_request');
  });

  it('a base64 body (as API Gateway delivers forms) is read like text; an empty value counts as absent', async () => {
    const options = clientRequest(confidential, {
      grant_type: 'refresh_token',
      refresh_token: '',
      scope: '',
    });
    const reply = await send(options.body as string, 'application/x-www-form-urlencoded;charset=UTF-8', true);
    expect(reply.status).toBe(401);
    const authenticated = await world.call('POST', '/v1/oauth2/token', { ...options, base64: true });
    expectError(authenticated, 400, 'invalid_request');
    expect(authenticated.body.error_description).toBe('refresh_token is required.');
  });

  it('grant_type missing → invalid_request; unknown → unsupported_grant_type', async () => {
    expectError(await token(confidential, {}), 400, 'invalid_request');
    expectError(await token(confidential, { grant_type: 'password' }), 400, 'unsupported_grant_type');
    expectError(
      await token(confidential, { grant_type: 'client_credentials' }),
      400,
      'unsupported_grant_type',
    );
  });
});
