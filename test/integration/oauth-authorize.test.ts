/**
 * Authorize and Consent: the authorization request of the code flow, checked for the user who
 * presents it with a personal access token, and the consent that issues a single-use code, against
 * DynamoDB Local under each function's deployed policy.
 */
import { createHash, randomBytes } from 'node:crypto';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { AUTHORIZATION_CODE_TTL_SECONDS } from '#shared/domain/oauth.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { registerClient, registrants } from '../support/oauth.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
/** A user in two organizations, with every scope. */
let twoOrgsPat: string;
let secondOrganizationId: string;
beforeAll(async () => {
  world = await createWorld('oauth-authorize');
  const user = await createUser(world.admin, {
    email: `two-orgs+${randomBytes(4).toString('hex')}@x.example`,
  });
  const second = await createOrganization(world.admin, { name: 'Second' });
  secondOrganizationId = second.id;
  await addMember(world.admin, world.demo.organization_id, user.id);
  await addMember(world.admin, second.id, user.id);
  twoOrgsPat = (
    await createPersonalAccessToken(world.admin, { userId: user.id, scope: ALL_SCOPES.join(' ') })
  ).token;
});
afterAll(() => world?.drop());

const REDIRECT = 'https://app.example/callback?tenant=7';

interface Client {
  client_id: string;
  client_secret?: string;
  registration_access_token: string;
}

/** The suite registers more clients than one user may (CAPS.oauthClients): they are spread over users of their own. */
let registrant: () => Promise<string>;
beforeAll(() => {
  registrant = registrants(world.admin);
});

const register = async (body: Record<string, unknown> = {}): Promise<Client> =>
  registerClient(world.call, await registrant(), {
    redirect_uris: [REDIRECT],
    client_name: 'Consent app',
    scope: 'openid email products:read',
    ...body,
  });

const verifier = () => randomBytes(32).toString('base64url');
const challengeOf = (v: string) => createHash('sha256').update(v).digest('base64url');

function request(client: Client, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const parameters: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    scope: 'openid email',
    state: 'xyz-state',
    code_challenge: challengeOf(verifier()),
    code_challenge_method: 'S256',
    ...extra,
  };
  return Object.fromEntries(Object.entries(parameters).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;
}

const authorize = (parameters: Record<string, string> | string, token = world.demo.personal_access_token) =>
  world.call(
    'GET',
    `/v1/oauth2/authorize?${typeof parameters === 'string' ? parameters : new URLSearchParams(parameters)}`,
    { token },
  );

const consent = (
  body: Record<string, unknown>,
  token = world.demo.personal_access_token,
  headers: Record<string, string> = {},
) => world.call('POST', '/v1/oauth2/consent', { token, body, headers });

/** The answer at the client's redirect URI: the registered URI, its own query kept, then ours. */
function redirected(reply: Reply): URLSearchParams {
  expect(reply.status).toBe(303);
  expect(reply.headers['cache-control']).toBe('no-store');
  const location = reply.headers.location as string;
  expect(reply.body).toEqual({ redirect_to: location });
  expect(location.startsWith(`${REDIRECT}&`)).toBe(true);
  const query = new URL(location).searchParams;
  expect(query.get('tenant')).toBe('7');
  expect(query.get('iss')).toBe('https://api.test');
  return query;
}

function expectRedirectedError(reply: Reply, error: string, state: string | null = 'xyz-state'): void {
  const query = redirected(reply);
  expect(query.get('error')).toBe(error);
  expect(query.get('error_description')).toEqual(expect.any(String));
  expect(query.get('state')).toBe(state);
  expect(query.has('code')).toBe(false);
}

function expectCallerError(reply: Reply, error: string): void {
  expect(reply.status).toBe(400);
  expect(reply.body).toEqual({ error, error_description: expect.any(String) });
  expect(reply.headers).not.toHaveProperty('location');
  expect(reply.headers['cache-control']).toBe('no-store');
}

async function codeItems(): Promise<Record<string, unknown>[]> {
  const result = await world.table.doc.send(
    new ScanCommand({
      TableName: world.table.name,
      FilterExpression: 'begins_with(PK, :code)',
      ExpressionAttributeValues: { ':code': 'OAUTHCODE#' },
      ConsistentRead: true,
    }),
  );
  return result.Items ?? [];
}

describe('Authorize: a valid request is described, nothing is written', () => {
  it('a client acting for organizations: the client, the scopes asked, the user’s one organization as subject', async () => {
    const client = await register({
      client_uri: 'https://app.example',
      logo_uri: 'https://app.example/l.png',
    });
    const before = (await codeItems()).length;
    world.resetCount();
    const reply = await authorize(request(client));
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.body).toEqual({
      client: {
        created_at: expect.any(String),
        modified_at: null,
        client_id: client.client_id,
        client_name: 'Consent app',
        client_uri: 'https://app.example',
        logo_uri: 'https://app.example/l.png',
        tos_uri: null,
        policy_uri: null,
      },
      sub_type: 'organization',
      sub: { id: world.demo.organization_id, slug: expect.any(String), avatar_url: null },
      scopes: ['openid', 'email'],
      organizations: [{ id: world.demo.organization_id, slug: expect.any(String), avatar_url: null }],
      requires_single_organization: true,
    });
    expect((await codeItems()).length).toBe(before);
  });

  it('a client acting for users: the user as subject; no scope asked means the client’s registered scopes', async () => {
    const client = await register({ default_sub_type: 'user' });
    const reply = await authorize(request(client, { scope: undefined }));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      sub_type: 'user',
      sub: { id: expect.any(String), email: expect.stringContaining('@'), avatar_url: null },
      scopes: ['openid', 'email', 'products:read'],
      requires_single_organization: false,
    });
  });

  it('a user of two organizations: no subject chosen yet, both offered', async () => {
    const client = await register();
    const reply = await authorize(request(client), twoOrgsPat);
    expect(reply.body.sub).toBeNull();
    expect(reply.body.organizations.map((o: { id: string }) => o.id).sort()).toEqual(
      [world.demo.organization_id, secondOrganizationId].sort(),
    );
  });

  it('redirect_uri may be left out when the client registered exactly one', async () => {
    const client = await register();
    expect((await authorize(request(client, { redirect_uri: undefined }))).status).toBe(200);
  });
});

describe('Authorize: faults before the redirect URI is trusted are answered to the caller', () => {
  it.each<[string, (c: Client) => Record<string, string> | string, string]>([
    ['no client_id', (c) => request(c, { client_id: undefined }), 'invalid_request'],
    ['an unknown client', (c) => request(c, { client_id: `polar_ci_${'Q'.repeat(48)}` }), 'invalid_client'],
    ['a client id of another shape', (c) => request(c, { client_id: 'someone' }), 'invalid_client'],
    [
      'an unregistered redirect URI',
      (c) => request(c, { redirect_uri: 'https://evil.example/cb' }),
      'invalid_request',
    ],
    [
      'a redirect URI that differs only in case',
      (c) => request(c, { redirect_uri: REDIRECT.replace('app', 'APP') }),
      'invalid_request',
    ],
    [
      'a redirect URI with more query',
      (c) => request(c, { redirect_uri: `${REDIRECT}&x=1` }),
      'invalid_request',
    ],
    [
      'client_id twice',
      (c) => `${new URLSearchParams(request(c))}&client_id=${encodeURIComponent(c.client_id)}`,
      'invalid_request',
    ],
    [
      'redirect_uri twice',
      (c) => `${new URLSearchParams(request(c))}&redirect_uri=${encodeURIComponent(REDIRECT)}`,
      'invalid_request',
    ],
  ])('%s → 400 %s, no redirect', async (_, build, error) => {
    const client = await register();
    expectCallerError(await authorize(build(client)), error);
  });

  it('a deleted client is an unknown one', async () => {
    const client = await register();
    const removed = await world.call('DELETE', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
    });
    expect(removed.status).toBe(204);
    expectCallerError(await authorize(request(client)), 'invalid_client');
  });

  it('a client that registered several redirect URIs must name one', async () => {
    const client = await register({ redirect_uris: [REDIRECT, 'https://app.example/other'] });
    expectCallerError(await authorize(request(client, { redirect_uri: undefined })), 'invalid_request');
    expect((await authorize(request(client, { redirect_uri: 'https://app.example/other' }))).status).toBe(
      200,
    );
  });
});

describe('Authorize: later faults go back to the client, with state and iss', () => {
  it.each<[string, Record<string, string | undefined>, string]>([
    ['no response_type', { response_type: undefined }, 'invalid_request'],
    ['response_type token', { response_type: 'token' }, 'unsupported_response_type'],
    [
      'no code_challenge (PKCE is required of every client)',
      { code_challenge: undefined },
      'invalid_request',
    ],
    [
      'no code_challenge_method (plain would be the default)',
      { code_challenge_method: undefined },
      'invalid_request',
    ],
    ['code_challenge_method plain', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['a challenge that is no SHA-256', { code_challenge: 'short' }, 'invalid_request'],
    ['a scope the client did not register', { scope: 'openid webhooks:write' }, 'invalid_scope'],
    ['an unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
    ['a scope of spaces only', { scope: '   ' }, 'invalid_scope'],
  ])('%s → %s', async (_, extra, error) => {
    const client = await register();
    expectRedirectedError(await authorize(request(client, extra)), error);
  });

  it('a repeated parameter → invalid_request; a state too long is not echoed', async () => {
    const client = await register();
    expectRedirectedError(
      await authorize(`${new URLSearchParams(request(client))}&scope=openid`),
      'invalid_request',
    );
    expectRedirectedError(
      await authorize(request(client, { state: 'x'.repeat(1025) })),
      'invalid_request',
      null,
    );
  });

  it('without state, none is sent back', async () => {
    const client = await register();
    expectRedirectedError(
      await authorize(request(client, { state: undefined, scope: 'nope' })),
      'invalid_scope',
      null,
    );
  });
});

describe('Authorize and Consent: a user delegates only what their own token holds', () => {
  it('a PAT without the scopes asked → 403 insufficient_scope naming them', async () => {
    const client = await register();
    for (const reply of [
      await authorize(request(client), world.demo.personal_access_token_without_scopes),
      await consent({ action: 'allow', ...request(client) }, world.demo.personal_access_token_without_scopes),
    ]) {
      expect(reply.status).toBe(403);
      expect(reply.body).toEqual({
        error: 'insufficient_scope',
        error_description: expect.stringContaining('openid email'),
      });
      expect(reply.headers['www-authenticate']).toBe(
        'Bearer realm="polar", error="insufficient_scope", scope="openid email"',
      );
    }
  });

  it('without a credential → 401, before anything about the request', async () => {
    const reply = await world.call('GET', '/v1/oauth2/authorize?client_id=x');
    expect(reply.status).toBe(401);
    expect((await consent({ action: 'allow' }, '')).status).toBe(401);
  });
});

describe('Consent', () => {
  it('allow: 303 to the client with a code, stored only as its hash, bound to what was consented; 3 round trips', async () => {
    const client = await register();
    const v = verifier();
    const before = (await codeItems()).length;
    world.resetCount();
    const reply = await consent({ action: 'allow', ...request(client, { code_challenge: challengeOf(v) }) });
    expect(world.roundTrips()).toBe(3);
    const query = redirected(reply);
    expect(query.get('state')).toBe('xyz-state');
    const code = query.get('code') as string;
    expect(code).toMatch(/^polar_ac_[A-Za-z0-9]{48}$/);
    expect((await codeItems()).length).toBe(before + 1);
    const { Item } = await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: keys.authorizationCode(hashSecret(code)) }),
    );
    expect(JSON.stringify(Item)).not.toContain(code);
    expect(Item).toMatchObject({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      redirect_uri_given: true,
      scope: 'openid email',
      code_challenge: challengeOf(v),
      sub_type: 'organization',
      organization_ids: [world.demo.organization_id],
    });
    const lifetime = (Date.parse(Item?.expires_at) - Date.parse(Item?.created_at)) / 1000;
    expect(lifetime).toBe(AUTHORIZATION_CODE_TTL_SECONDS);
    expect(Item?.expires_ttl).toBe(Math.floor(Date.parse(Item?.expires_at) / 1000) + 86_400);
  });

  it('deny: 303 with access_denied and state, and nothing written', async () => {
    const client = await register();
    const before = (await codeItems()).length;
    expectRedirectedError(await consent({ action: 'deny', ...request(client) }), 'access_denied');
    expect((await codeItems()).length).toBe(before);
  });

  it('answers every fault of the request as Authorize does, and writes nothing', async () => {
    const client = await register();
    const before = (await codeItems()).length;
    expectCallerError(
      await consent({ action: 'allow', ...request(client, { redirect_uri: 'https://evil.example/' }) }),
      'invalid_request',
    );
    expectRedirectedError(
      await consent({ action: 'allow', ...request(client, { code_challenge_method: 'plain' }) }),
      'invalid_request',
    );
    expectRedirectedError(
      await consent({ action: 'allow', ...request(client, { scope: 'webhooks:write' }) }),
      'invalid_scope',
    );
    expect((await codeItems()).length).toBe(before);
  });

  it('a body off its schema is the contract 422', async () => {
    const client = await register();
    const reply = await consent({ action: 'maybe', ...request(client) });
    expect(reply.status).toBe(422);
    expect(reply.body.detail[0].loc).toEqual(['body', 'action']);
  });

  describe('the subject', () => {
    it('a client acting for users: the user, in every organization of the token', async () => {
      const client = await register({ default_sub_type: 'user' });
      const code = redirected(await consent({ action: 'allow', ...request(client) }, twoOrgsPat)).get(
        'code',
      ) as string;
      const { Item } = await world.table.doc.send(
        new GetCommand({ TableName: world.table.name, Key: keys.authorizationCode(hashSecret(code)) }),
      );
      expect(Item?.sub_type).toBe('user');
      expect([...(Item?.organization_ids ?? [])].sort()).toEqual(
        [world.demo.organization_id, secondOrganizationId].sort(),
      );
    });

    it('…which takes no organization_id', async () => {
      const client = await register({ default_sub_type: 'user' });
      const reply = await consent({
        action: 'allow',
        organization_id: world.demo.organization_id,
        ...request(client),
      });
      expect(reply.status).toBe(422);
      expect(reply.body).toMatchObject({
        error: 'PolarRequestValidationError',
        detail: [{ loc: ['body', 'organization_id'] }],
      });
    });

    it('a user of two organizations names one; outside the token’s is one that does not exist', async () => {
      const client = await register();
      const missing = await consent({ action: 'allow', ...request(client) }, twoOrgsPat);
      expect(missing.status).toBe(422);
      expect(missing.body.detail[0]).toMatchObject({ loc: ['body', 'organization_id'], type: 'missing' });
      const foreign = await consent(
        {
          action: 'allow',
          organization_id: world.demo.other_organization.organization_id,
          ...request(client),
        },
        twoOrgsPat,
      );
      expect(foreign.status).toBe(422);
      expect(foreign.body.detail[0].msg).toBe('Organization does not exist.');
      const chosen = await consent(
        { action: 'allow', organization_id: secondOrganizationId.toUpperCase(), ...request(client) },
        twoOrgsPat,
      );
      const code = redirected(chosen).get('code') as string;
      const { Item } = await world.table.doc.send(
        new GetCommand({ TableName: world.table.name, Key: keys.authorizationCode(hashSecret(code)) }),
      );
      expect(Item?.organization_ids).toEqual([secondOrganizationId]);
    });
  });

  it('Idempotency-Key: a retry gets the same code and writes nothing more', async () => {
    const client = await register();
    const body = { action: 'allow', ...request(client) };
    const key = { 'idempotency-key': `consent-${randomBytes(4).toString('hex')}` };
    const first = await consent(body, world.demo.personal_access_token, key);
    const before = (await codeItems()).length;
    const again = await consent(body, world.demo.personal_access_token, key);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(first.headers.location);
    expect((await codeItems()).length).toBe(before);
  });
});
