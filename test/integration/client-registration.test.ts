/**
 * RFC 7592 client configuration: GET, PUT and DELETE /v1/oauth2/register/{client_id} with the
 * registration access token Create Client returns, against DynamoDB Local under each function's
 * deployed policy.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/data/table.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { registrationMetadata } from '../support/oauth.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('client-registration');
});
afterAll(() => world?.drop());

interface Registered {
  client_id: string;
  client_secret?: string;
  registration_access_token: string;
  registration_client_uri: string;
  [field: string]: unknown;
}

async function register(body: Record<string, unknown> = {}): Promise<Registered> {
  const reply = await world.call('POST', '/v1/oauth2/register', {
    token: world.demo.personal_access_token,
    body: { redirect_uris: ['https://app.example/cb'], client_name: 'RFC 7592 app', ...body },
  });
  expect(reply.status).toBe(201);
  return reply.body as Registered;
}

const path = (clientId: string) => `/v1/oauth2/register/${clientId}`;
const read = (client: Registered, token = client.registration_access_token) =>
  world.call('GET', path(client.client_id), { token });
const replace = (client: Registered, body: unknown, token = client.registration_access_token) =>
  world.call('PUT', path(client.client_id), { token, body });
const remove = (client: Registered, token = client.registration_access_token) =>
  world.call('DELETE', path(client.client_id), { token });

async function stored(clientId: string) {
  const result = await world.table.doc.send(
    new GetCommand({ TableName: world.table.name, Key: keys.oauthClient(clientId), ConsistentRead: true }),
  );
  return result.Item;
}

function expectInvalidToken(reply: Reply): void {
  expect(reply.status).toBe(401);
  expect(reply.body).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
  expect(reply.headers['www-authenticate']).toBe('Bearer realm="polar", error="invalid_token"');
  expect(reply.headers['cache-control']).toBe('no-store');
}

describe('Create Client hands out the RFC 7592 credentials', () => {
  it('returns a registration access token and the registration URL, and stores only the token hash', async () => {
    const client = await register();
    expect(client.registration_access_token).toMatch(/^polar_crt_[A-Za-z0-9]{32,}$/);
    expect(client.registration_client_uri).toBe(`https://api.test/v1/oauth2/register/${client.client_id}`);
    const item = await stored(client.client_id);
    expect(item?.registration_token_hash).toBe(hashSecret(client.registration_access_token));
    expect(JSON.stringify(item)).not.toContain(client.registration_access_token);
  });

  // Whatever Host the request names, the URL is on the configured issuer: test/integration/issuer.test.ts.
});

describe('GET /v1/oauth2/register/{client_id}', () => {
  it('answers the registration without any secret (200, no-store), in one round trip', async () => {
    const client = await register({ scope: 'openid email', client_uri: 'https://app.example' });
    world.resetCount();
    const reply = await read(client);
    expect(world.roundTrips()).toBe(1);
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers.pragma).toBe('no-cache');
    expect(reply.body).toEqual({
      ...registrationMetadata(client),
      client_id_issued_at: client.client_id_issued_at,
      client_secret_expires_at: 0,
      registration_client_uri: client.registration_client_uri,
    });
    expect(reply.raw).not.toContain('polar_cs_');
    expect(reply.raw).not.toContain('polar_crt_');
  });

  it('a public client has no secret fields at all', async () => {
    const client = await register({ token_endpoint_auth_method: 'none' });
    const reply = await read(client);
    expect(reply.status).toBe(200);
    expect(reply.body).not.toHaveProperty('client_secret_expires_at');
  });

  it('refuses every token but this client’s own with the same 401', async () => {
    const client = await register();
    const other = await register();
    const unknownClient = `polar_ci_${'x'.repeat(48)}`;
    expectInvalidToken(await read(client, other.registration_access_token));
    expectInvalidToken(await read(client, `polar_crt_${'A'.repeat(48)}`));
    expectInvalidToken(
      await world.call('GET', path(unknownClient), { token: client.registration_access_token }),
    );
    expectInvalidToken(
      await world.call('GET', path('not-a-client'), { token: client.registration_access_token }),
    );
    // A personal access token, a customer session: the wrong kind of credential.
    for (const token of [world.demo.personal_access_token, world.demo.customer_session_token]) {
      const reply = await read(client, token);
      expect(reply.status).toBe(401);
      expect(reply.body).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
    }
    expect((await world.call('GET', path(client.client_id), {})).status).toBe(401);
  });
});

describe('PUT /v1/oauth2/register/{client_id}', () => {
  it('replaces the metadata: what is left out takes its default or goes; 2 round trips', async () => {
    const client = await register({
      scope: 'openid email',
      logo_uri: 'https://app.example/logo.png',
      default_sub_type: 'user',
    });
    world.resetCount();
    const reply = await replace(client, {
      client_id: client.client_id,
      redirect_uris: ['https://app.example/new-cb'],
      client_name: 'Renamed',
    });
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.body).toMatchObject({
      client_id: client.client_id,
      client_name: 'Renamed',
      redirect_uris: ['https://app.example/new-cb'],
      default_sub_type: 'organization',
      token_endpoint_auth_method: 'client_secret_post',
      registration_client_uri: client.registration_client_uri,
    });
    expect(reply.body).not.toHaveProperty('logo_uri');
    expect((reply.body as { scope: string }).scope.split(' ').length).toBeGreaterThan(2);
    // Read back, with the same (not rotated) token.
    expect((await read(client)).body).toEqual(reply.body);
    expect((await stored(client.client_id))?.modified_at).toEqual(expect.any(String));
  });

  it('accepts the client’s own secret, and checks the metadata as Create Client does', async () => {
    const client = await register();
    const body = { ...registrationMetadata(client), client_secret: client.client_secret };
    expect((await replace(client, body)).status).toBe(200);
    const fragment = await replace(client, {
      ...registrationMetadata(client),
      redirect_uris: ['https://a.example/cb#x'],
    });
    expect(fragment.status).toBe(400);
    expect(fragment.body).toMatchObject({ error: 'invalid_redirect_uri' });
    const scope = await replace(client, { ...registrationMetadata(client), scope: 'openid nonsense:write' });
    expect(scope.body).toMatchObject({ error: 'invalid_client_metadata' });
    const schema = await replace(client, { client_id: client.client_id, client_name: 'no uris' });
    expect(schema.status).toBe(422);
    expect(schema.body).toMatchObject({ detail: [{ loc: ['body', 'redirect_uris'], type: 'missing' }] });
  });

  it('refuses a wrong client id or secret and every server-set field with 400 invalid_request, changing nothing', async () => {
    const client = await register();
    const before = await stored(client.client_id);
    const cases: Record<string, unknown>[] = [
      { ...registrationMetadata(client), client_id: `polar_ci_${'y'.repeat(48)}` },
      { ...registrationMetadata(client), client_secret: 'polar_cs_wrong' },
      { ...registrationMetadata(client), registration_access_token: client.registration_access_token },
      { ...registrationMetadata(client), registration_client_uri: client.registration_client_uri },
      { ...registrationMetadata(client), client_id_issued_at: 1 },
      { ...registrationMetadata(client), client_secret_expires_at: 0 },
    ];
    for (const body of cases) {
      const reply = await replace(client, { ...body, client_name: 'should not stick' });
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body).toMatchObject({ error: 'invalid_request' });
      expect(reply.headers['cache-control']).toBe('no-store');
    }
    expect(await stored(client.client_id)).toEqual(before);
  });

  it('a client cannot switch between public and confidential', async () => {
    const confidential = await register();
    const toPublic = await replace(confidential, {
      ...registrationMetadata(confidential),
      token_endpoint_auth_method: 'none',
    });
    expect(toPublic.status).toBe(400);
    expect(toPublic.body).toMatchObject({ error: 'invalid_client_metadata' });
    const publicClient = await register({ token_endpoint_auth_method: 'none' });
    const toConfidential = await replace(publicClient, {
      ...registrationMetadata(publicClient),
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(toConfidential.status).toBe(400);
    // Between the two confidential methods is fine.
    const basic = await replace(confidential, {
      ...registrationMetadata(confidential),
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(basic.status).toBe(200);
  });

  it('another client’s token cannot replace this registration', async () => {
    const client = await register();
    const other = await register();
    expectInvalidToken(await replace(client, registrationMetadata(client), other.registration_access_token));
  });
});

describe('DELETE /v1/oauth2/register/{client_id}', () => {
  it('deletes (204, no-store) in 2 round trips; the token then stops working at once', async () => {
    const client = await register();
    world.resetCount();
    const reply = await remove(client);
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(204);
    expect(reply.headers['cache-control']).toBe('no-store');
    expectInvalidToken(await read(client));
    expectInvalidToken(await replace(client, registrationMetadata(client)));
    expectInvalidToken(await remove(client));
    const item = await stored(client.client_id);
    expect(item?.deleted_at).toEqual(expect.any(String));
    expect(item).not.toHaveProperty('registration_token_hash');
  });

  it('of concurrent deletes exactly one answers 204', async () => {
    const client = await register();
    const replies = await Promise.all(Array.from({ length: 6 }, () => remove(client)));
    expect(replies.filter((reply) => reply.status === 204)).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 204)) expectInvalidToken(reply);
  });

  it('a delete racing an update: the update never resurrects the client', async () => {
    const client = await register();
    const [updated, deleted] = await Promise.all([
      replace(client, { ...registrationMetadata(client), client_name: 'late rename' }),
      remove(client),
    ]);
    expect(deleted.status).toBe(204);
    expect([200, 401]).toContain(updated.status);
    expectInvalidToken(await read(client));
    expect((await stored(client.client_id))?.deleted_at).toEqual(expect.any(String));
  });
});
