/**
 * Credentials with a lifecycle (issue 27, point 2): personal access tokens expire (a default and a
 * maximum), are listed without their secret and revoked; a removed membership leaves every token
 * already issued at once; an OAuth grant has an absolute lifetime however often it is refreshed.
 * Against DynamoDB Local under the functions' deployed policies; clocks are injected, never waited on.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
  listPersonalAccessTokensOf,
  PAT_DEFAULT_TTL_DAYS,
  PAT_MAX_TTL_DAYS,
  removeMember,
  revokePersonalAccessTokenOf,
  TokenLifetimeRefused,
} from '#scripts/admin/commands.ts';
import { GRANT_MAX_LIFETIME_SECONDS } from '#shared/domain/oauth.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { dynamodbEndpoint } from '../support/dynamodb.ts';
import { issueTokens, registerClient, tokenRequest } from '../support/oauth.ts';
import { createWorld, inProcessApi, type World } from '../support/world.ts';

const DAY = 86_400_000;
let world: World;
beforeAll(async () => {
  world = await createWorld('token-lifecycle');
});
afterAll(() => world?.drop());

/** A user who belongs to the demo organization and to one more, each with a product. */
async function memberOfTwo(email: string) {
  const { admin, demo } = world;
  const user = await createUser(admin, { email });
  const second = await createOrganization(admin, { name: `Second ${email}` });
  await addMember(admin, demo.organization_id, user.id);
  await addMember(admin, second.id, user.id);
  const product = await createProduct(admin, {
    organizationId: second.id,
    name: 'Second product',
    recurringInterval: 'month',
    priceAmount: 500,
    currency: 'usd',
  });
  const { token } = await createPersonalAccessToken(admin, { userId: user.id, scope: ALL_SCOPES.join(' ') });
  return { user, second, secondProductId: product.id, pat: token };
}

const getProduct = (token: string, id: string) => world.call('GET', `/v1/products/${id}`, { token });

describe('personal access tokens expire', () => {
  it(`after ${PAT_DEFAULT_TTL_DAYS} days by default; at most ${PAT_MAX_TTL_DAYS} days; never in the past`, async () => {
    const now = new Date('2026-03-01T12:00:00.000Z');
    const admin = { ...world.admin, now: () => now };
    const user = await createUser(admin, { email: 'expiry-default@x.example' });
    const { record } = await createPersonalAccessToken(admin, { userId: user.id, scope: '' });
    expect(record.expires_at).toBe(new Date(now.getTime() + PAT_DEFAULT_TTL_DAYS * DAY).toISOString());

    const longest = new Date(now.getTime() + PAT_MAX_TTL_DAYS * DAY);
    expect(
      (await createPersonalAccessToken(admin, { userId: user.id, scope: '', expiresAt: longest })).record,
    ).toMatchObject({ expires_at: longest.toISOString() });
    for (const expiresAt of [new Date(longest.getTime() + 1000), now]) {
      await expect(
        createPersonalAccessToken(admin, { userId: user.id, scope: '', expiresAt }),
      ).rejects.toThrow(TokenLifetimeRefused);
    }
    // Only the three accepted above were stored.
    expect(await listPersonalAccessTokensOf(admin, user.id)).toHaveLength(2);
  });

  it('the operator CLI refuses a longer life (usage error, exit 2) and prints no token', async () => {
    const run = promisify(execFile);
    const refused = await run(
      'npx',
      [
        'tsx',
        'scripts/admin.ts',
        'token',
        'create',
        '--user',
        world.demo.organization_id,
        '--expires-in-days',
        '366',
      ],
      {
        env: {
          ...process.env,
          TABLE_NAME: world.table.name,
          AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint(),
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
        },
      },
    ).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(refused?.code).toBe(2);
    expect(refused?.stderr).toContain(`at most ${PAT_MAX_TTL_DAYS} days`);
    expect(refused?.stdout).not.toMatch(/polar_pat_/);
  });
});

describe('personal access tokens are listed and revoked', () => {
  it('a revoked token answers 401 invalid_token from the next request; the list shows it revoked', async () => {
    const { admin, demo } = world;
    const user = await createUser(admin, { email: 'revoke@x.example' });
    await addMember(admin, demo.organization_id, user.id);
    const kept = await createPersonalAccessToken(admin, { userId: user.id, scope: 'products:read' });
    const doomed = await createPersonalAccessToken(admin, { userId: user.id, scope: 'products:read' });
    expect((await getProduct(doomed.token, demo.free_product_id)).status).toBe(200);

    const revoked = await revokePersonalAccessTokenOf(admin, user.id, doomed.record.token_id);
    expect(revoked).toMatchObject({ id: doomed.record.token_id, status: 'revoked' });
    const reply = await getProduct(doomed.token, demo.free_product_id);
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
    expect((await getProduct(kept.token, demo.free_product_id)).status).toBe(200);

    const listed = await listPersonalAccessTokensOf(admin, user.id);
    expect(listed.map(({ id, status }) => ({ id, status }))).toEqual([
      { id: kept.record.token_id, status: 'active' },
      { id: doomed.record.token_id, status: 'revoked' },
    ]);
    // Another user's token id, or an unknown one, revokes nothing.
    const stranger = await createUser(admin, { email: 'stranger@x.example' });
    expect(await revokePersonalAccessTokenOf(admin, stranger.id, kept.record.token_id)).toBeUndefined();
    expect((await getProduct(kept.token, demo.free_product_id)).status).toBe(200);
  });
});

describe('a removed membership ends at once for tokens already issued', () => {
  it('personal access token: the organization is gone from the next request, the other one kept', async () => {
    const { demo, admin } = world;
    const { user, second, secondProductId, pat } = await memberOfTwo('removed-pat@x.example');
    expect((await getProduct(pat, demo.free_product_id)).status).toBe(200);

    expect(await removeMember(admin, demo.organization_id, user.id)).toBe(true);
    expect((await getProduct(pat, demo.free_product_id)).status).toBe(404);
    expect((await getProduct(pat, secondProductId)).status).toBe(200);
    const listed = await world.call('GET', '/v1/products/', { token: pat });
    expect(listed.status).toBe(200);
    expect(new Set(listed.body.items.map((p: { organization_id: string }) => p.organization_id))).toEqual(
      new Set([second.id]),
    );
    // Removing it again is no change.
    expect(await removeMember(admin, demo.organization_id, user.id)).toBe(false);
  });

  it('OAuth access tokens: one acting for the organization is refused; one acting for the user loses it', async () => {
    const { demo, admin } = world;
    const { user, second, secondProductId, pat } = await memberOfTwo('removed-oauth@x.example');
    const forOrganization = await registerClient(world.call, pat, { scope: 'products:read' });
    const forUser = await registerClient(world.call, pat, {
      scope: 'products:read',
      default_sub_type: 'user',
    });
    const organizationToken = (
      await issueTokens(world.call, pat, forOrganization, {
        scope: 'products:read',
        organization_id: demo.organization_id,
      })
    ).access_token;
    const secondToken = (
      await issueTokens(world.call, pat, forOrganization, {
        scope: 'products:read',
        organization_id: second.id,
      })
    ).access_token;
    const userToken = (await issueTokens(world.call, pat, forUser, { scope: 'products:read' })).access_token;
    for (const token of [organizationToken, userToken])
      expect((await getProduct(token, demo.free_product_id)).status).toBe(200);

    await removeMember(admin, demo.organization_id, user.id);
    const refused = await getProduct(organizationToken, demo.free_product_id);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_token');
    expect((await getProduct(userToken, demo.free_product_id)).status).toBe(404);
    expect((await getProduct(userToken, secondProductId)).status).toBe(200);
    expect((await getProduct(secondToken, secondProductId)).status).toBe(200);

    // A membership added back reaches the tokens whose consent named it.
    await addMember(admin, demo.organization_id, user.id);
    expect((await getProduct(organizationToken, demo.free_product_id)).status).toBe(200);
  });
});

describe('an OAuth grant has an absolute lifetime', () => {
  /** The API with its functions' clocks at `at`. */
  const callAt = (at: Date) => inProcessApi((name) => ({ ...world.depsFor(name), now: () => at }));

  it(`refreshed every 29 days, it is refused once ${GRANT_MAX_LIFETIME_SECONDS / 86_400} days have passed since the code`, async () => {
    const pat = world.demo.personal_access_token;
    const client = await registerClient(world.call, pat, { scope: 'products:read' });
    const issuedAt = Date.now();
    let { refresh_token: refreshToken } = await issueTokens(world.call, pat, client, {
      scope: 'products:read',
    });
    const end = issuedAt + GRANT_MAX_LIFETIME_SECONDS * 1000;
    for (let at = issuedAt + 29 * DAY; at < end - DAY; at += 29 * DAY) {
      const reply = await tokenRequest(callAt(new Date(at)), client, {
        grant_type: 'refresh_token',
        refresh_token: refreshToken as string,
      });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      refreshToken = reply.body.refresh_token;
    }
    const late = await tokenRequest(callAt(new Date(end + 1000)), client, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken as string,
    });
    expect(late.status).toBe(400);
    expect(late.body).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringContaining('absolute lifetime'),
    });
  });
});

describe('a user lists the applications they authorized and revokes one', () => {
  it('listed by client without any token; revoking one ends its access and refresh tokens at once', async () => {
    const { admin, demo } = world;
    const user = await createUser(admin, { email: 'apps@x.example' });
    await addMember(admin, demo.organization_id, user.id);
    const pat = (await createPersonalAccessToken(admin, { userId: user.id, scope: ALL_SCOPES.join(' ') }))
      .token;
    const stranger = (
      await createPersonalAccessToken(admin, {
        userId: (await createUser(admin, { email: 'apps-stranger@x.example' })).id,
        scope: ALL_SCOPES.join(' '),
      })
    ).token;
    const appA = await registerClient(world.call, demo.personal_access_token, {
      client_name: 'App A',
      scope: 'products:read',
    });
    const appB = await registerClient(world.call, demo.personal_access_token, {
      client_name: 'App B',
      scope: 'products:read openid',
    });
    const a1 = await issueTokens(world.call, pat, appA, { scope: 'products:read' });
    const a2 = await issueTokens(world.call, pat, appA, { scope: 'products:read' });
    const b = await issueTokens(world.call, pat, appB, { scope: 'products:read openid' });

    const list = (token: string) => world.call('GET', '/v1/oauth2/authorized-clients', { token });
    const listed = await list(pat);
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([
      expect.objectContaining({
        client_id: appA.client_id,
        client_name: 'App A',
        scope: 'products:read',
        organization_ids: [demo.organization_id],
      }),
      expect.objectContaining({
        client_id: appB.client_id,
        client_name: 'App B',
        scope: 'products:read openid',
      }),
    ]);
    for (const token of [a1, a2, b]) expect(listed.raw).not.toContain(token.access_token);
    // Only the user's own: another user's list has none of them; an OAuth token may not list.
    expect((await list(stranger)).body.items).toEqual([]);
    expect((await list(a1.access_token)).status).toBe(401);

    const revoke = (token: string, clientId: string) =>
      world.call('DELETE', `/v1/oauth2/authorized-clients/${clientId}`, { token });
    expect((await revoke(stranger, appA.client_id)).status).toBe(404);
    expect((await getProduct(a1.access_token, demo.free_product_id)).status).toBe(200);

    expect((await revoke(pat, appA.client_id)).status).toBe(204);
    for (const token of [a1, a2]) {
      const refused = await getProduct(token.access_token, demo.free_product_id);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('invalid_token');
      const refresh = await tokenRequest(world.call, appA, {
        grant_type: 'refresh_token',
        refresh_token: token.refresh_token as string,
      });
      expect(refresh.status).toBe(400);
      expect(refresh.body.error).toBe('invalid_grant');
    }
    expect((await getProduct(b.access_token, demo.free_product_id)).status).toBe(200);
    expect((await list(pat)).body.items.map((item: { client_id: string }) => item.client_id)).toEqual([
      appB.client_id,
    ]);
    expect((await revoke(pat, appA.client_id)).status).toBe(404);
  });
});
