/**
 * Revocation (RFC 7009), introspection (RFC 7662) and UserInfo, against DynamoDB Local under each
 * function's deployed policy.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/data/table.ts';
import { findToken } from '#shared/data/tokens.ts';
import { ACCESS_TOKEN_TTL_SECONDS } from '#shared/domain/oauth.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import {
  clientRequest,
  expireItem,
  issueTokens,
  type RegisteredClient,
  registerClient,
  type Tokens,
  tokenRequest,
} from '../support/oauth.ts';
import { digestChanges, tableDigest } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
let confidential: RegisteredClient;
let demoUserId: string;
beforeAll(async () => {
  world = await createWorld('oauth-revoke');
  confidential = await register({ token_endpoint_auth_method: 'client_secret_post' });
  const pat = await findToken(world.table, hashSecret(world.demo.personal_access_token));
  demoUserId = (pat as { user_id: string }).user_id;
});
afterAll(() => world?.drop());

const register = (metadata: Record<string, unknown> = {}) =>
  registerClient(world.call, world.demo.personal_access_token, metadata);
const tokensOf = (client: RegisteredClient, options: { scope?: string } = {}) =>
  issueTokens(world.call, world.demo.personal_access_token, client, options);
const revoke = (client: RegisteredClient, token: string, extra: Record<string, string> = {}) =>
  world.call('POST', '/v1/oauth2/revoke', clientRequest(client, { token, ...extra }));
const introspect = (client: RegisteredClient, token: string) =>
  world.call('POST', '/v1/oauth2/introspect', clientRequest(client, { token }));
const stored = async (secret: string) =>
  (
    await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: keys.token(hashSecret(secret)),
        ConsistentRead: true,
      }),
    )
  ).Item;

function expectRevoked(reply: Reply): void {
  expect(reply.status).toBe(200);
  expect(reply.body).toEqual({});
  expect(reply.headers['cache-control']).toBe('no-store');
}

describe('revocation (RFC 7009)', () => {
  it('an access token ends alone; the refresh token still works; 3 round trips', async () => {
    const tokens = await tokensOf(confidential);
    world.resetCount();
    expectRevoked(await revoke(confidential, tokens.access_token, { token_type_hint: 'access_token' }));
    expect(world.roundTrips()).toBe(3);
    expect((await stored(tokens.access_token))?.revoked_at).toEqual(expect.any(String));
    expect((await stored(tokens.refresh_token as string))?.revoked_at).toBeNull();
    const refreshed = await tokenRequest(world.call, confidential, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token as string,
    });
    expect(refreshed.status).toBe(200);
  });

  it('a refresh token ends its grant: the live access token with it; 4 round trips', async () => {
    const tokens = await tokensOf(confidential);
    world.resetCount();
    // The hint is not needed (nor trusted): a wrong one finds the token all the same.
    expectRevoked(
      await revoke(confidential, tokens.refresh_token as string, { token_type_hint: 'access_token' }),
    );
    expect(world.roundTrips()).toBe(4);
    for (const secret of [tokens.access_token, tokens.refresh_token as string]) {
      expect((await stored(secret))?.revoked_at).toEqual(expect.any(String));
    }
    const refreshed = await tokenRequest(world.call, confidential, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token as string,
    });
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
  });

  it('a public client revokes its own tokens', async () => {
    const publicClient = await register({ token_endpoint_auth_method: 'none' });
    const tokens = await tokensOf(publicClient);
    expectRevoked(await revoke(publicClient, tokens.refresh_token as string));
    expect((await stored(tokens.access_token))?.revoked_at).toEqual(expect.any(String));
  });

  it("unknown, another client's, already revoked, any other string: the same 200, and nothing changes", async () => {
    const theirs = await tokensOf(await register({ token_endpoint_auth_method: 'client_secret_basic' }));
    const ended = await tokensOf(confidential);
    expectRevoked(await revoke(confidential, ended.refresh_token as string));
    const before = await tableDigest(world.table);
    const presented = [
      theirs.access_token,
      theirs.refresh_token as string,
      ended.access_token,
      ended.refresh_token as string,
      `polar_rt_o_${'Q'.repeat(48)}`,
      world.demo.personal_access_token,
      'anything',
    ];
    const replies = await Promise.all(presented.map((token) => revoke(confidential, token)));
    for (const reply of replies) expectRevoked(reply);
    expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
    expect((await stored(theirs.access_token))?.revoked_at).toBeNull();
  });

  it('no token → 400 invalid_request; no client authentication → 401 invalid_client', async () => {
    const missing = await world.call('POST', '/v1/oauth2/revoke', clientRequest(confidential, {}));
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    const anonymous = await world.call('POST', '/v1/oauth2/revoke', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=x',
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toBe('Basic realm="polar"');
  });
});

describe('introspection (RFC 7662)', () => {
  let tokens: Tokens;
  beforeAll(async () => {
    tokens = await tokensOf(confidential, { scope: 'openid email' });
  });

  it('an active access token: what it grants, for whom, until when; 2 round trips', async () => {
    world.resetCount();
    const reply = await introspect(confidential, tokens.access_token);
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.body).toEqual({
      active: true,
      client_id: confidential.client_id,
      token_type: 'access_token',
      scope: 'openid email',
      sub_type: 'organization',
      sub: world.demo.organization_id,
      organizations: [world.demo.organization_id],
      aud: confidential.client_id,
      iss: 'https://api.test',
      exp: expect.any(Number),
      iat: expect.any(Number),
    });
    expect(reply.body.exp - reply.body.iat).toBe(ACCESS_TOKEN_TTL_SECONDS);
  });

  it('a refresh token, and a token acting for a user', async () => {
    expect((await introspect(confidential, tokens.refresh_token as string)).body).toMatchObject({
      active: true,
      token_type: 'refresh_token',
    });
    const users = await register({
      default_sub_type: 'user',
      token_endpoint_auth_method: 'client_secret_basic',
    });
    const userTokens = await tokensOf(users);
    expect((await introspect(users, userTokens.access_token)).body).toMatchObject({
      active: true,
      sub_type: 'user',
      sub: demoUserId,
    });
  });

  it("revoked, expired, replaced, another client's, unknown, any string: {active: false}", async () => {
    const revoked = await tokensOf(confidential);
    expectRevoked(await revoke(confidential, revoked.access_token));
    const expired = await tokensOf(confidential);
    await expireItem(world.table, keys.token(hashSecret(expired.access_token)));
    const replaced = await tokensOf(confidential);
    expect(
      (
        await tokenRequest(world.call, confidential, {
          grant_type: 'refresh_token',
          refresh_token: replaced.refresh_token as string,
        })
      ).status,
    ).toBe(200);
    const theirs = await tokensOf(await register({ token_endpoint_auth_method: 'client_secret_basic' }));
    for (const token of [
      revoked.access_token,
      expired.access_token,
      replaced.refresh_token as string,
      replaced.access_token,
      theirs.access_token,
      `polar_at_o_${'Z'.repeat(48)}_${'Y'.repeat(48)}`,
      world.demo.personal_access_token,
      'anything',
    ]) {
      const reply = await introspect(confidential, token);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ active: false });
    }
  });

  it('a public client cannot introspect (it cannot authenticate): 401 invalid_client', async () => {
    const publicClient = await register({ token_endpoint_auth_method: 'none' });
    const own = await tokensOf(publicClient);
    const reply = await introspect(publicClient, own.access_token);
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_client');
  });
});

describe('UserInfo', () => {
  it('with a personal access token: the user, and with the email scope the address; 2 round trips', async () => {
    world.resetCount();
    const reply = await world.call('GET', '/v1/oauth2/userinfo', { token: world.demo.personal_access_token });
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      sub: demoUserId,
      email: expect.stringContaining('@'),
      email_verified: false,
    });
  });

  it('without the openid scope: 403 insufficient_scope', async () => {
    const reply = await world.call('GET', '/v1/oauth2/userinfo', {
      token: world.demo.personal_access_token_without_scopes,
    });
    expect(reply.status).toBe(403);
    expect(reply.headers['www-authenticate']).toContain('scope="openid"');
  });
});
