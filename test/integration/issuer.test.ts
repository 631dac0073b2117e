/**
 * Issue 27 point 4: the issuer and every absolute URL the API hands out come from configuration
 * (the world is configured with `WORLD_ISSUER`, as the stack passes each stage its own), never from
 * the request's `Host` header, which the caller chooses. Each request below names a hostile host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientRequest,
  issueTokens,
  pkce,
  REDIRECT_URI,
  registerClient,
  registrationMetadata,
} from '../support/oauth.ts';
import { createWorld, WORLD_ISSUER, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('issuer');
});
afterAll(() => world?.drop());

const HOSTILE = { host: 'attacker.example', 'x-forwarded-host': 'attacker.example' };
const pat = () => world.demo.personal_access_token;

describe('every absolute URL is on the configured issuer, whatever Host the request names', () => {
  it.each(['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'])(
    'discovery %s: the issuer and every endpoint',
    async (path) => {
      const reply = await world.call('GET', path, { headers: HOSTILE });
      expect(reply.status).toBe(200);
      expect(reply.body.issuer).toBe(WORLD_ISSUER);
      for (const [field, value] of Object.entries(reply.body)) {
        if (field.endsWith('_endpoint') || field.endsWith('_uri')) {
          expect(String(value).startsWith(`${WORLD_ISSUER}/`), field).toBe(true);
        }
      }
      expect(JSON.stringify(reply.body)).not.toContain('attacker');
    },
  );

  it('registration_client_uri on Create, Get and Update Client', async () => {
    const created = await world.call('POST', '/v1/oauth2/register', {
      token: pat(),
      headers: HOSTILE,
      body: { redirect_uris: [REDIRECT_URI], client_name: 'issuer check' },
    });
    expect(created.status).toBe(201);
    const expected = `${WORLD_ISSUER}/v1/oauth2/register/${created.body.client_id}`;
    expect(created.body.registration_client_uri).toBe(expected);
    const path = `/v1/oauth2/register/${created.body.client_id}`;
    const token = created.body.registration_access_token;
    const read = await world.call('GET', path, { token, headers: HOSTILE });
    expect(read.body.registration_client_uri).toBe(expected);
    const updated = await world.call('PUT', path, {
      token,
      headers: HOSTILE,
      body: { ...registrationMetadata(created.body), client_name: 'issuer check, renamed' },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.registration_client_uri).toBe(expected);
  });

  it('`iss` (RFC 9207) on the consent redirect and on an authorization error', async () => {
    const client = await registerClient(world.call, pat(), { default_sub_type: 'user' });
    const { challenge } = pkce();
    const consent = await world.call('POST', '/v1/oauth2/consent', {
      token: pat(),
      headers: HOSTILE,
      body: {
        action: 'allow',
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      },
    });
    expect(consent.status).toBe(303);
    expect(new URL(consent.headers.location as string).searchParams.get('iss')).toBe(WORLD_ISSUER);
    const refused = await world.call(
      'GET',
      `/v1/oauth2/authorize?response_type=token&client_id=${client.client_id}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`,
      { token: pat(), headers: HOSTILE },
    );
    expect(refused.status).toBe(303);
    expect(new URL(refused.headers.location as string).searchParams.get('iss')).toBe(WORLD_ISSUER);
  });

  it('`iss` of introspection and of the ID Token', async () => {
    const client = await registerClient(world.call, pat(), { default_sub_type: 'user' });
    const tokens = (await issueTokens(world.call, pat(), client, { scope: 'openid' })) as {
      access_token: string;
      id_token?: string;
    };
    const request = clientRequest(client, { token: tokens.access_token });
    const introspected = await world.call('POST', '/v1/oauth2/introspect', {
      ...request,
      headers: { ...request.headers, ...HOSTILE },
    });
    expect(introspected.body).toMatchObject({ active: true, iss: WORLD_ISSUER });
    const claims = JSON.parse(
      Buffer.from(String(tokens.id_token).split('.')[1] ?? '', 'base64url').toString(),
    );
    expect(claims.iss).toBe(WORLD_ISSUER);
  });

  it("the customer portal URL's default origin", async () => {
    const reply = await world.call('POST', '/v1/customer-sessions/', {
      token: pat(),
      headers: HOSTILE,
      body: { customer_id: world.demo.customer_id },
    });
    expect(reply.status).toBe(201);
    expect(new URL(reply.body.customer_portal_url).origin).toBe(WORLD_ISSUER);
  });
});
