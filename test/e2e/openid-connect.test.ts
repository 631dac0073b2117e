/**
 * OpenID Connect judged by an independent relying party, panva's `openid-client` 6, over HTTP
 * against the local API (issue 27 point 5): discovery, dynamic registration (with the user's
 * personal access token as the initial access token), the code flow with PKCE, state and nonce, the
 * ID Token validated against the JWKS by the library (`authorizationCodeGrant` with
 * `expectedNonce`), UserInfo for the ID Token's subject, refresh and revocation. The user's side
 * (Authorize, Consent) is two API calls with the user's token: this service has no browser login.
 * The local API is plain http on 127.0.0.1, so the library is told `allowInsecureRequests`.
 */
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson } from '../support/contract.ts';
import { sharedLocalApi } from '../support/local-api.ts';

// The e2e project's one local API (test/support/e2e-stack.ts): this file registers its own client and
// spends only its own tokens. It had started and seeded a stack of its own, the one e2e file left doing so
// without needing other options.
let stack: ReturnType<typeof sharedLocalApi>;
beforeAll(() => {
  stack = sharedLocalApi();
});
afterAll(() => stack?.stop());

const redirectUri = 'https://rp.example/callback';
const pat = () => stack.demo.personal_access_token;

/** The user's agent: Authorize shows the consent, Consent answers the redirect to the client. */
async function consentTo(authorizationUrl: URL): Promise<URL> {
  const shown = await fetchJson(authorizationUrl.toString(), {
    headers: { authorization: `Bearer ${pat()}` },
  });
  expect(shown.status, JSON.stringify(shown.body)).toBe(200);
  const allowed = await fetchJson(`${stack.demo.base_url}/v1/oauth2/consent`, {
    method: 'POST',
    redirect: 'manual',
    headers: { authorization: `Bearer ${pat()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'allow', ...Object.fromEntries(authorizationUrl.searchParams) }),
  });
  expect(allowed.status, JSON.stringify(allowed.body)).toBe(303);
  return new URL(allowed.headers.get('location') as string);
}

describe('OpenID Connect through openid-client 6', () => {
  let config: client.Configuration;

  it('discovers the provider and registers a client dynamically', async () => {
    config = await client.dynamicClientRegistration(
      new URL(stack.demo.base_url),
      {
        redirect_uris: [redirectUri],
        client_name: 'openid-client relying party',
        scope: 'openid email',
        // openid-client's default client authentication, when none is given, is client_secret_post.
        token_endpoint_auth_method: 'client_secret_post',
        default_sub_type: 'user',
      },
      undefined,
      { execute: [client.allowInsecureRequests], initialAccessToken: pat() },
    );
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(stack.demo.base_url);
    expect(metadata.jwks_uri).toBe(`${stack.demo.base_url}/.well-known/jwks.json`);
    expect(metadata.id_token_signing_alg_values_supported).toEqual(['RS256']);
    expect(config.clientMetadata().client_id).toMatch(/^polar_ci_/);
  });

  let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
  let subject: string;

  it('code + PKCE + state + nonce: the ID Token is validated against the JWKS and carries the nonce', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const callback = await consentTo(url);
    tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new Error('no ID Token');
    expect(claims).toMatchObject({
      iss: stack.demo.base_url,
      aud: config.clientMetadata().client_id,
      nonce,
    });
    expect(typeof claims.auth_time).toBe('number');
    expect(claims.exp - claims.iat).toBe(3600);
    subject = claims.sub;
  });

  it('a wrong nonce is refused by the library: the nonce is honoured, not ignored', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce: client.randomNonce(),
    });
    const callback = await consentTo(url);
    const error = await client
      .authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedNonce: client.randomNonce(),
        idTokenExpected: true,
      })
      .then(
        () => undefined,
        (caught: unknown) => caught as { code?: string; cause?: unknown },
      );
    expect(error?.code).toBe('OAUTH_JWT_CLAIM_COMPARISON_FAILED');
    // The library names the claim that did not match somewhere in the error's causes.
    const causes: unknown[] = [];
    for (let cause: unknown = error; cause; cause = (cause as { cause?: unknown }).cause) causes.push(cause);
    expect(causes.some((cause) => (cause as { claim?: string }).claim === 'nonce')).toBe(true);
  });

  it('UserInfo answers for the subject of the ID Token', async () => {
    const info = await client.fetchUserInfo(config, tokens.access_token, subject);
    expect(info.sub).toBe(subject);
    expect(info.email).toEqual(expect.any(String));
  });

  it('refresh rotates the tokens, and revocation ends the new access token', async () => {
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await client.fetchUserInfo(config, refreshed.access_token, subject)).sub).toBe(subject);
    await client.tokenRevocation(config, refreshed.access_token);
    await expect(client.fetchUserInfo(config, refreshed.access_token, subject)).rejects.toThrow();
  });
});
