/**
 * The authorization server judged by a standard client library, `oauth4webapi`, over HTTP against
 * the local API: every request to the authorization server is built and every answer accepted only
 * by the library's own functions. The user's side (Authorize, Consent) is two plain API calls with
 * the user's personal access token: this service has no browser login. The local API is plain http
 * on 127.0.0.1, so each call opts in with `allowInsecureRequests`.
 */
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson } from '../support/contract.ts';
import { sharedLocalApi } from '../support/local-api.ts';

let stack: ReturnType<typeof sharedLocalApi>;
let issuer: URL;
beforeAll(async () => {
  stack = sharedLocalApi();
  issuer = new URL(stack.demo.base_url);
});
afterAll(() => stack?.stop());

const insecure = { [oauth.allowInsecureRequests]: true } as const;

async function discover(algorithm: 'oidc' | 'oauth2'): Promise<oauth.AuthorizationServer> {
  const response = await oauth.discoveryRequest(issuer, { algorithm, ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

describe('discovery', () => {
  it.each(['oauth2', 'oidc'] as const)(
    '%s: the document is found where the library looks and its issuer is the URL it asked',
    async (algorithm) => {
      const as = await discover(algorithm);
      expect(as.issuer).toBe(stack.demo.base_url);
      expect(as.registration_endpoint).toBe(`${stack.demo.base_url}/v1/oauth2/register`);
      expect(as.code_challenge_methods_supported).toEqual(['S256']);
    },
  );

  it('both addresses serve one document, cacheable, with a trailing slash too; a longer path is a 404', async () => {
    const a = await fetchJson(`${stack.demo.base_url}/.well-known/oauth-authorization-server`);
    const b = await fetchJson(`${stack.demo.base_url}/.well-known/openid-configuration/`);
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    expect(a.headers.get('content-type')).toBe('application/json');
    expect(a.headers.get('cache-control')).toBe('public, max-age=3600');
    const deeper = await fetchJson(`${stack.demo.base_url}/.well-known/openid-configuration/x`);
    expect(deeper.status).toBe(404);
    expect(deeper.body).toEqual({ error: 'NotFound', detail: 'Not Found' });
    const post = await fetchJson(`${stack.demo.base_url}/.well-known/openid-configuration`, {
      method: 'POST',
    });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });
});

/**
 * The whole flow, each step through the library: discovery, registration, RFC 7592 read and
 * update, authorization with PKCE (the user's consent through the API with their personal access
 * token, since there is no browser login), code exchange, the access token on Create Subscription
 * and Get Subscription, UserInfo, refresh with rotation, a replay revoking the family,
 * introspection, revocation, the revoked token refused, and the client deleted (RFC 7592) with its
 * tokens refused at once.
 */
describe('the authorization code flow, end to end through oauth4webapi', () => {
  const redirectUri = 'https://app.example/callback';
  let as: oauth.AuthorizationServer;
  let client: oauth.Client;
  let clientAuth: oauth.ClientAuth;
  let registration: { token: string; uri: string };

  const pat = () => stack.demo.personal_access_token;
  /** RFC 7592: a request to the registration with its registration access token. */
  const registrationCall = (method: string, body?: unknown) =>
    oauth.protectedResourceRequest(
      registration.token,
      method,
      new URL(registration.uri),
      body === undefined ? undefined : new Headers({ 'content-type': 'application/json' }),
      body === undefined ? undefined : JSON.stringify(body),
      insecure,
    );
  const api = (path: string) => new URL(path, stack.demo.base_url);

  /** The user's agent: Authorize, then Consent (allow), both with the user's personal access token. */
  async function consent(authorizationUrl: URL): Promise<URL> {
    const described = await fetch(authorizationUrl, { headers: { authorization: `Bearer ${pat()}` } });
    expect(described.status).toBe(200);
    expect(await described.json()).toMatchObject({
      client: { client_id: client.client_id },
      sub_type: 'organization',
    });
    const answered = await fetch(api('/v1/oauth2/consent'), {
      method: 'POST',
      redirect: 'manual',
      headers: { authorization: `Bearer ${pat()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'allow', ...Object.fromEntries(authorizationUrl.searchParams) }),
    });
    expect(answered.status).toBe(303);
    return new URL(answered.headers.get('location') as string);
  }

  /** A fresh authorization: PKCE S256 and state, consented, the code exchanged. */
  async function authorize(scope: string): Promise<oauth.TokenEndpointResponse> {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint as string);
    for (const [name, value] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })) {
      url.searchParams.set(name, value);
    }
    const callback = await consent(url);
    const params = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      clientAuth,
      params,
      redirectUri,
      verifier,
      insecure,
    );
    return oauth.processAuthorizationCodeResponse(as, client, response);
  }

  const callApi = (accessToken: string, method: string, path: string, body?: unknown) =>
    oauth.protectedResourceRequest(
      accessToken,
      method,
      api(path),
      body === undefined ? undefined : new Headers({ 'content-type': 'application/json' }),
      body === undefined ? undefined : JSON.stringify(body),
      insecure,
    );

  async function refused(call: () => Promise<unknown>): Promise<unknown> {
    try {
      await call();
    } catch (error) {
      return error;
    }
    throw new Error('the call resolved, a refusal was expected');
  }

  const expectInvalidToken = async (call: () => Promise<unknown>) => {
    const error = (await refused(call)) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause[0]?.parameters.error).toBe('invalid_token');
  };

  let tokens: oauth.TokenEndpointResponse;

  it('discovers the server and registers a confidential client (RFC 8414, RFC 7591)', async () => {
    as = await discover('oauth2');
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        redirect_uris: [redirectUri],
        client_name: 'oauth4webapi end to end',
        token_endpoint_auth_method: 'client_secret_basic',
        scope: 'openid email subscriptions:read subscriptions:write',
      },
      { initialAccessToken: pat(), ...insecure },
    );
    client = await oauth.processDynamicClientRegistrationResponse(response);
    clientAuth = oauth.ClientSecretBasic(client.client_secret as string);
    registration = {
      token: client.registration_access_token as string,
      uri: client.registration_client_uri as string,
    };
  });

  it('reads and updates the registration with its registration access token (RFC 7592)', async () => {
    const read = await registrationCall('GET');
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({
      client_id: client.client_id,
      client_name: 'oauth4webapi end to end',
    });
    const updated = await registrationCall('PUT', {
      client_id: client.client_id,
      redirect_uris: [redirectUri],
      client_name: 'oauth4webapi end to end, renamed',
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'openid email subscriptions:read subscriptions:write',
    });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toMatchObject({ client_name: 'oauth4webapi end to end, renamed' });
  });

  it('authorizes with PKCE (consent by the user), exchanges the code, and the API takes the token', async () => {
    tokens = await authorize('openid email subscriptions:read subscriptions:write');
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope).toBe('openid email subscriptions:read subscriptions:write');
    expect(tokens.access_token).toMatch(/^polar_at_o_/);
    expect(tokens.refresh_token).toMatch(/^polar_rt_o_/);

    const created = await callApi(tokens.access_token, 'POST', '/v1/subscriptions/', {
      product_id: stack.demo.free_product_id,
      customer_id: stack.demo.customer_id,
      metadata: { via: 'oauth4webapi' },
    });
    expect(created.status).toBe(201);
    const subscription = (await created.json()) as { id: string };
    const read = await callApi(tokens.access_token, 'GET', `/v1/subscriptions/${subscription.id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: subscription.id, metadata: { via: 'oauth4webapi' } });

    const info = await oauth.userInfoRequest(as, client, tokens.access_token, insecure);
    const subject = await oauth.processUserInfoResponse(as, client, stack.demo.organization_id, info);
    expect(subject.sub).toBe(stack.demo.organization_id);
  });

  it('a token without the scope an operation needs is refused with its challenge', async () => {
    const error = (await refused(() =>
      callApi(tokens.access_token, 'GET', `/v1/products/${stack.demo.free_product_id}`),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error.status).toBe(403);
    expect(error.cause[0]?.parameters).toMatchObject({ error: 'insufficient_scope' });
  });

  it('refreshes with rotation; replaying the replaced refresh token revokes the whole family', async () => {
    const first = tokens;
    const rotated = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, first.refresh_token as string, insecure),
    );
    expect(rotated.refresh_token).not.toBe(first.refresh_token);
    // The access token issued with the replaced refresh token ended with it.
    await expectInvalidToken(() =>
      callApi(first.access_token, 'GET', `/v1/subscriptions/${stack.demo.subscription_id}`),
    );
    expect(
      (await callApi(rotated.access_token, 'GET', `/v1/subscriptions/${stack.demo.subscription_id}`)).status,
    ).toBe(200);

    const replay = await oauth.refreshTokenGrantRequest(
      as,
      client,
      clientAuth,
      first.refresh_token as string,
      insecure,
    );
    const error = (await refused(() =>
      oauth.processRefreshTokenResponse(as, client, replay),
    )) as oauth.ResponseBodyError;
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect(error.error).toBe('invalid_grant');
    // The family is revoked: the current tokens too.
    await expectInvalidToken(() =>
      callApi(rotated.access_token, 'GET', `/v1/subscriptions/${stack.demo.subscription_id}`),
    );
    const afterReplay = await oauth.refreshTokenGrantRequest(
      as,
      client,
      clientAuth,
      rotated.refresh_token as string,
      insecure,
    );
    expect(
      (
        (await refused(() =>
          oauth.processRefreshTokenResponse(as, client, afterReplay),
        )) as oauth.ResponseBodyError
      ).error,
    ).toBe('invalid_grant');
  });

  it('introspects (RFC 7662) and revokes (RFC 7009); the revoked token is refused by the API', async () => {
    const fresh = await authorize('openid subscriptions:read');
    const introspect = async (token: string) =>
      oauth.processIntrospectionResponse(
        as,
        client,
        await oauth.introspectionRequest(as, client, clientAuth, token, insecure),
      );
    const active = await introspect(fresh.access_token);
    expect(active).toMatchObject({
      active: true,
      client_id: client.client_id,
      scope: 'openid subscriptions:read',
      sub: stack.demo.organization_id,
      iss: as.issuer,
    });
    const revocation = await oauth.revocationRequest(as, client, clientAuth, fresh.access_token, {
      additionalParameters: { token_type_hint: 'access_token' },
      ...insecure,
    });
    await oauth.processRevocationResponse(revocation);
    expect(await introspect(fresh.access_token)).toEqual({ active: false });
    await expectInvalidToken(() =>
      callApi(fresh.access_token, 'GET', `/v1/subscriptions/${stack.demo.subscription_id}`),
    );
    // The refresh token of that grant is untouched by revoking the access token alone.
    expect((await introspect(fresh.refresh_token as string)).active).toBe(true);
  });

  it('deleting the registration (RFC 7592) ends every token of the client at once', async () => {
    const live = await authorize('openid subscriptions:read');
    expect(
      (await callApi(live.access_token, 'GET', `/v1/subscriptions/${stack.demo.subscription_id}`)).status,
    ).toBe(200);
    const deleted = await registrationCall('DELETE');
    expect(deleted.status).toBe(204);
    await expectInvalidToken(() =>
      callApi(live.access_token, 'GET', `/v1/subscriptions/${stack.demo.subscription_id}`),
    );
    const refresh = await oauth.refreshTokenGrantRequest(
      as,
      client,
      clientAuth,
      live.refresh_token as string,
      insecure,
    );
    // The client itself is gone: 401 invalid_client, with the Basic challenge of client authentication.
    const error = (await refused(() =>
      oauth.processRefreshTokenResponse(as, client, refresh),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause[0]).toMatchObject({ scheme: 'basic', parameters: { realm: 'polar' } });
  });
});

describe('a public client (token_endpoint_auth_method none), through oauth4webapi', () => {
  it('registers, authorizes with PKCE, exchanges with None(), refreshes, and revokes its own refresh token', async () => {
    const as = await discover('oidc');
    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          redirect_uris: ['com.example.app:/oauth/callback'],
          client_name: 'public',
          token_endpoint_auth_method: 'none',
          scope: 'openid email',
          default_sub_type: 'user',
        },
        { initialAccessToken: stack.demo.personal_access_token, ...insecure },
      ),
    );
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(as.authorization_endpoint as string);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      scope: 'openid email',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const consented = await fetch(new URL('/v1/oauth2/consent', stack.demo.base_url), {
      method: 'POST',
      redirect: 'manual',
      headers: {
        authorization: `Bearer ${stack.demo.personal_access_token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ action: 'allow', ...Object.fromEntries(url.searchParams) }),
    });
    const params = oauth.validateAuthResponse(
      as,
      client,
      new URL(consented.headers.get('location') as string),
      oauth.expectNoState,
    );
    const none = oauth.None();
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        none,
        params,
        'com.example.app:/oauth/callback',
        verifier,
        insecure,
      ),
    );
    expect(tokens.access_token).toMatch(/^polar_at_u_/);
    const info = await oauth.processUserInfoResponse(
      as,
      client,
      oauth.skipSubjectCheck,
      await oauth.userInfoRequest(as, client, tokens.access_token, insecure),
    );
    expect(info.email).toEqual(expect.stringContaining('@'));
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, none, tokens.refresh_token as string, insecure),
    );
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, none, refreshed.refresh_token as string, insecure),
    );
    const after = await oauth.refreshTokenGrantRequest(
      as,
      client,
      none,
      refreshed.refresh_token as string,
      insecure,
    );
    const error = await oauth.processRefreshTokenResponse(as, client, after).catch((e: unknown) => e);
    expect((error as oauth.ResponseBodyError).error).toBe('invalid_grant');
  });

  it('cannot introspect: it cannot authenticate (RFC 7662 §2.1)', async () => {
    const as = await discover('oauth2');
    expect(as.introspection_endpoint_auth_methods_supported).toEqual([
      'client_secret_basic',
      'client_secret_post',
    ]);
  });
});
