import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalAccessToken } from '#scripts/admin/commands.ts';
import { indexNames } from '#shared/data/table.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { issueTokens, registerClient } from '../support/oauth.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('create-client');
});
afterAll(() => world?.drop());

const register = (body: unknown, path = '/v1/oauth2/register') =>
  world.call('POST', path, { token: world.demo.personal_access_token, body });

describe('Create Client (RFC 7591)', () => {
  it('registers a confidential client with defaults applied (201, no-store)', async () => {
    const before = Math.floor(Date.now() / 1000);
    const reply = await register({ redirect_uris: ['https://app.example/callback'], client_name: 'My app' });
    expect(reply.status).toBe(201);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers.pragma).toBe('no-cache');
    expect(reply.headers['content-type']).toBe('application/json');
    const client = reply.body;
    expect(client).toMatchObject({
      redirect_uris: ['https://app.example/callback'],
      client_name: 'My app',
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: ALL_SCOPES.join(' '),
      default_sub_type: 'organization',
      client_secret_expires_at: 0,
    });
    expect(client.client_id).toMatch(/^polar_ci_[A-Za-z0-9]{32,}$/);
    expect(client.client_secret).toMatch(/^polar_cs_[A-Za-z0-9]{32,}$/);
    expect(Number.isInteger(client.client_id_issued_at)).toBe(true);
    expect(client.client_id_issued_at).toBeGreaterThanOrEqual(before);
    for (const omitted of ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'])
      expect(client).not.toHaveProperty(omitted);
  });

  it('stores only the hash of the client secret', async () => {
    const reply = await register({ redirect_uris: ['https://a.example/cb'], client_name: 'hash check' });
    const stored = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        IndexName: indexNames.gsi1,
        KeyConditionExpression: 'GSI1PK = :owner AND begins_with(GSI1SK, :kind)',
        ExpressionAttributeValues: { ':owner': `USER#${await userId()}`, ':kind': 'OAUTHCLIENT#' },
      }),
    );
    const item = stored.Items?.find((i) => i.client_id === reply.body.client_id);
    expect(item?.client_secret_hash).toBe(hashSecret(reply.body.client_secret));
    expect(JSON.stringify(stored.Items)).not.toContain(reply.body.client_secret);
  });

  it('registers a public client without secret fields', async () => {
    const reply = await register({
      redirect_uris: [
        'myapp://callback',
        'http://127.0.0.1:8080/cb',
        'http://localhost/cb',
        'http://[::1]:9/cb',
      ],
      client_name: 'CLI',
      token_endpoint_auth_method: 'none',
      scope: 'openid  profile openid',
      default_sub_type: 'user',
      logo_uri: 'https://app.example/logo.png',
      client_uri: null,
      unknown_field: 'ignored',
    });
    expect(reply.status).toBe(201);
    expect(reply.body).not.toHaveProperty('client_secret');
    expect(reply.body).not.toHaveProperty('client_secret_expires_at');
    expect(reply.body).not.toHaveProperty('unknown_field');
    expect(reply.body).not.toHaveProperty('client_uri');
    expect(reply.body).toMatchObject({
      scope: 'openid profile',
      default_sub_type: 'user',
      logo_uri: 'https://app.example/logo.png',
    });
  });

  it('stores repeated grant and response types once, and the largest registration fits one item', async () => {
    const uri = (i: number) => `https://app.example/${String(i).padEnd(2060, 'p')}`;
    const reply = await register({
      redirect_uris: Array.from({ length: 20 }, (_, i) => uri(i)),
      client_name: '名'.repeat(255),
      client_uri: `https://app.example/${'c'.repeat(2060)}`,
      grant_types: [...Array.from({ length: 1000 }, () => 'refresh_token'), 'authorization_code'],
      response_types: ['code', 'code'],
    });
    expect(reply.status).toBe(201);
    expect(reply.body.grant_types).toEqual(['refresh_token', 'authorization_code']);
    expect(reply.body.response_types).toEqual(['code']);
  });

  it('serves the trailing-slash spelling too', async () => {
    const reply = await register(
      { redirect_uris: ['https://a.example/cb'], client_name: 'x' },
      '/v1/oauth2/register/',
    );
    expect(reply.status).toBe(201);
  });

  it.each([
    [{ client_name: 'x' }, ['body', 'redirect_uris'], 'missing'],
    [{ redirect_uris: ['https://a.example'] }, ['body', 'client_name'], 'missing'],
    [{ redirect_uris: [], client_name: 'x' }, ['body', 'redirect_uris'], 'too_short'],
    [{ redirect_uris: [''], client_name: 'x' }, ['body', 'redirect_uris', '0'], 'string_too_short'],
    [{ redirect_uris: ['foobar'], client_name: 'x' }, ['body', 'redirect_uris', '0'], 'url_parsing'],
    [
      { redirect_uris: ['https://a.example', 7], client_name: 'x' },
      ['body', 'redirect_uris', '1'],
      'string_type',
    ],
    [{ redirect_uris: ['https://a.example'], client_name: 5 }, ['body', 'client_name'], 'string_type'],
    [
      {
        redirect_uris: ['https://a.example'],
        client_name: 'x',
        token_endpoint_auth_method: 'private_key_jwt',
      },
      ['body', 'token_endpoint_auth_method'],
      'enum',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'x', grant_types: ['implicit'] },
      ['body', 'grant_types', '0'],
      'enum',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'x', response_types: ['token'] },
      ['body', 'response_types', '0'],
      'literal_error',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'x', default_sub_type: 'team' },
      ['body', 'default_sub_type'],
      'enum',
    ],
    [
      {
        redirect_uris: ['https://a.example'],
        client_name: 'x',
        logo_uri: `https://a.example/${'l'.repeat(2070)}`,
      },
      ['body', 'logo_uri'],
      'string_too_long',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'x', tos_uri: '' },
      ['body', 'tos_uri'],
      'string_too_short',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'x', policy_uri: 'not a uri' },
      ['body', 'policy_uri'],
      'url_parsing',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'n'.repeat(256) },
      ['body', 'client_name'],
      'string_too_long',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'n'.repeat(900_000) },
      ['body', 'client_name'],
      'string_too_long',
    ],
    [
      { redirect_uris: Array.from({ length: 21 }, (_, i) => `https://a.example/${i}`), client_name: 'x' },
      ['body', 'redirect_uris'],
      'too_long',
    ],
    [
      { redirect_uris: Array.from({ length: 20_000 }, (_, i) => `https://a.example/${i}`), client_name: 'x' },
      ['body', 'redirect_uris'],
      'too_long',
    ],
    [
      { redirect_uris: [`https://a.example/${'p'.repeat(2070)}`], client_name: 'x' },
      ['body', 'redirect_uris', '0'],
      'string_too_long',
    ],
    [
      { redirect_uris: ['https://a.example'], client_name: 'x', client_uri: 'u'.repeat(2084) },
      ['body', 'client_uri'],
      'string_too_long',
    ],
  ])('rejects %j (422)', async (body, loc, type) => {
    const reply = await register(body);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toBe('RequestValidationError');
    expect(reply.body.detail).toContainEqual(expect.objectContaining({ loc, type }));
  });

  it.each([
    [['https://a.example/cb#frag'], 'invalid_redirect_uri'],
    [['http://app.example/cb'], 'invalid_redirect_uri'],
    [['http://127.0.0.1.evil.example/cb'], 'invalid_redirect_uri'],
    [['javascript:alert(1)'], 'invalid_redirect_uri'],
    [['data:text/html,hi'], 'invalid_redirect_uri'],
    [['http://999.999.999.999/cb'], 'invalid_redirect_uri'],
    [['https://a.example:99999/cb'], 'invalid_redirect_uri'],
  ])('rejects redirect URIs %j (400 %s)', async (redirect_uris, error) => {
    const reply = await register({ redirect_uris, client_name: 'x' });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error, error_description: expect.any(String) });
  });

  it.each(['openid admin', 'openid webhooks:delete', ' '])(
    'rejects scope %j (400 invalid_client_metadata)',
    async (scope) => {
      const reply = await register({ redirect_uris: ['https://a.example'], client_name: 'x', scope });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toBe('invalid_client_metadata');
    },
  );

  it('costs at most 2 DynamoDB round trips, authentication included', async () => {
    world.resetCount();
    expect((await register({ redirect_uris: ['https://a.example'], client_name: 'x' })).status).toBe(201);
    expect(world.roundTrips()).toBeLessThanOrEqual(2);
  });
});

describe("Create Client needs the user's own credential (issue 27 point 3)", () => {
  const body = { redirect_uris: ['https://a.example/cb'], client_name: 'credential check' };
  const clientCount = async () => {
    const stored = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        IndexName: indexNames.gsi1,
        KeyConditionExpression: 'GSI1PK = :owner AND begins_with(GSI1SK, :kind)',
        ExpressionAttributeValues: { ':owner': `USER#${await userId()}`, ':kind': 'OAUTHCLIENT#' },
      }),
    );
    return stored.Count ?? 0;
  };

  it('refuses a personal access token without user:write (403 insufficient_scope), registering nothing', async () => {
    const before = await clientCount();
    for (const scope of ['', 'openid email products:write webhooks:write', 'user:read']) {
      const { token } = await createPersonalAccessToken(world.admin, { userId: await userId(), scope });
      const reply = await world.call('POST', '/v1/oauth2/register', { token, body });
      expect(reply.status, scope).toBe(403);
      expect(reply.body.error).toBe('insufficient_scope');
      expect(reply.headers['www-authenticate']).toContain('scope="user:write"');
      expect(reply.headers['cache-control']).toBe('no-store');
    }
    const { token } = await createPersonalAccessToken(world.admin, {
      userId: await userId(),
      scope: 'user:write',
    });
    expect((await world.call('POST', '/v1/oauth2/register', { token, body })).status).toBe(201);
    expect(await clientCount()).toBe(before + 1);
  });

  it('refuses an OAuth access token, even one delegated with every scope (401 Unauthorized), registering nothing', async () => {
    const pat = world.demo.personal_access_token;
    const app = await registerClient(world.call, pat, {
      scope: ALL_SCOPES.join(' '),
      default_sub_type: 'user',
    });
    const before = await clientCount();
    for (const scope of ['openid email', ALL_SCOPES.join(' ')]) {
      const { access_token } = await issueTokens(world.call, pat, app, { scope });
      const reply = await world.call('POST', '/v1/oauth2/register', { token: access_token, body });
      expect(reply.status, scope).toBe(401);
      expect(reply.body.error).toBe('Unauthorized');
      expect(reply.headers['cache-control']).toBe('no-store');
    }
    expect(await clientCount()).toBe(before);
  });
});

async function userId(): Promise<string> {
  const { findToken } = await import('#shared/data/tokens.ts');
  const token = await findToken(world.table, hashSecret(world.demo.personal_access_token));
  if (token?.kind !== 'personal_access_token') throw new Error('demo PAT missing');
  return token.user_id;
}
