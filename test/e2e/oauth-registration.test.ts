/**
 * RFC 7591 registration judged by a standard OAuth client, `oauth4webapi`:
 * requests are built by `dynamicClientRegistrationRequest` and answers are only
 * accepted through `processDynamicClientRegistrationResponse` (201, JSON object,
 * string `client_id`, a numeric `client_secret_expires_at` beside a secret,
 * RFC 6749 error bodies, RFC 6750 `WWW-Authenticate` challenges). The same
 * library's `protectedResourceRequest` judges the bearer challenges of the other
 * operations. The local API is plain http on 127.0.0.1, so every call opts in
 * with the library's `allowInsecureRequests` option.
 */
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDocumented } from '../support/contract.ts';
import { sharedLocalApi } from '../support/local-api.ts';

let stack: ReturnType<typeof sharedLocalApi>;
let as: oauth.AuthorizationServer;
beforeAll(async () => {
  stack = sharedLocalApi();
  const base = stack.demo.base_url;
  as = { issuer: base, registration_endpoint: `${base}/v1/oauth2/register` };
});
afterAll(() => stack?.stop());

const insecure = { [oauth.allowInsecureRequests]: true } as const;

function register(metadata: Partial<oauth.Client>, initialAccessToken?: string) {
  return oauth.dynamicClientRegistrationRequest(as, metadata, {
    ...insecure,
    ...(initialAccessToken === undefined ? {} : { initialAccessToken }),
  });
}

/** Runs a call that must fail and returns what it threw. */
async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call resolved, a rejection was expected');
}

/** Processes the answer with the library, and checks the same bytes against the OpenAPI document. */
async function processAndDocument(response: Response) {
  const copy = response.clone();
  const client = await oauth.processDynamicClientRegistrationResponse(response);
  const text = await copy.text();
  expectDocumented('createClient', {
    status: copy.status,
    headers: copy.headers,
    body: JSON.parse(text),
    text,
  });
  return { client, headers: copy.headers };
}

describe('dynamic client registration through oauth4webapi', () => {
  it('refuses plain http unless allowInsecureRequests is set (why every call here sets it)', async () => {
    const error = await failure(() =>
      oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: ['https://app.example/cb'], client_name: 'x' },
        { initialAccessToken: stack.demo.personal_access_token },
      ),
    );
    expect(error).toBeInstanceOf(oauth.OperationProcessingError);
    expect((error as oauth.OperationProcessingError).code).toBe(oauth.HTTP_REQUEST_FORBIDDEN);
  });

  it('a confidential client: 201 accepted, secret with client_secret_expires_at 0, no-store', async () => {
    const response = await register(
      {
        redirect_uris: ['https://app.example/callback', 'http://localhost:8080/callback'],
        client_name: 'oauth4webapi confidential',
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: 'openid profile email',
        logo_uri: 'https://app.example/logo.png',
      },
      stack.demo.personal_access_token,
    );
    expect(response.status).toBe(201);
    const { client, headers } = await processAndDocument(response);
    expect(client.client_id).toMatch(/^polar_ci_/);
    expect(client.client_secret).toMatch(/^polar_cs_/);
    expect(client.client_secret_expires_at).toBe(0);
    expect(client.client_id_issued_at).toEqual(expect.any(Number));
    expect(Math.abs((client.client_id_issued_at as number) - Date.now() / 1000)).toBeLessThan(60);
    expect(client).toMatchObject({
      redirect_uris: ['https://app.example/callback', 'http://localhost:8080/callback'],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'openid profile email',
      logo_uri: 'https://app.example/logo.png',
      default_sub_type: 'organization',
    });
    // RFC 7591 §3.2.1: null metadata is left out, not echoed as null.
    expect(client).not.toHaveProperty('tos_uri');
    expect(headers.get('cache-control')).toBe('no-store');
    expect(headers.get('pragma')).toBe('no-cache');
  });

  it('a public client (token_endpoint_auth_method none): accepted without a secret', async () => {
    const response = await register(
      {
        redirect_uris: ['com.example.app:/oauth/callback'],
        client_name: 'oauth4webapi public',
        token_endpoint_auth_method: 'none',
      },
      stack.demo.personal_access_token,
    );
    const { client } = await processAndDocument(response);
    expect(client.token_endpoint_auth_method).toBe('none');
    expect(client).not.toHaveProperty('client_secret');
    expect(client).not.toHaveProperty('client_secret_expires_at');
    // Defaults applied and echoed (docs/api.md, Create Client).
    expect(client.grant_types).toEqual(['authorization_code', 'refresh_token']);
    expect(client.response_types).toEqual(['code']);
    expect((client.scope as string).split(' ')).toContain('customer_portal:read');
  });

  it('two registrations get distinct client ids', async () => {
    const metadata = { redirect_uris: ['https://app.example/cb'], client_name: 'twice' };
    const first = await processAndDocument(await register(metadata, stack.demo.personal_access_token));
    const second = await processAndDocument(await register(metadata, stack.demo.personal_access_token));
    expect(first.client.client_id).not.toBe(second.client.client_id);
  });

  it.for<[string, Partial<oauth.Client>]>([
    ['invalid_redirect_uri', { redirect_uris: ['http://app.example/cb'] }],
    ['invalid_redirect_uri', { redirect_uris: ['https://app.example/cb#fragment'] }],
    ['invalid_client_metadata', { redirect_uris: ['https://app.example/cb'], scope: 'openid admin:all' }],
  ])('400 %s → ResponseBodyError with the RFC 7591 error code', async ([code, metadata]) => {
    const response = await register(
      { ...metadata, client_name: 'rejected' },
      stack.demo.personal_access_token,
    );
    const error = await failure(() => oauth.processDynamicClientRegistrationResponse(response));
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    const bodyError = error as oauth.ResponseBodyError;
    expect(bodyError.status).toBe(400);
    expect(bodyError.error).toBe(code);
    expect(bodyError.error_description).toEqual(expect.any(String));
  });

  it('422 (schema) → ResponseBodyError carrying the error code RequestValidationError', async () => {
    const response = await register({ client_name: 'no redirect uris' }, stack.demo.personal_access_token);
    const error = (await failure(() =>
      oauth.processDynamicClientRegistrationResponse(response),
    )) as oauth.ResponseBodyError;
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect(error.status).toBe(422);
    expect(error.error).toBe('RequestValidationError');
    expect(error.cause).toMatchObject({ detail: [{ loc: ['body', 'redirect_uris'], type: 'missing' }] });
  });

  it('no initial access token → WWWAuthenticateChallengeError 401 with a Bearer realm challenge', async () => {
    const response = await register({ redirect_uris: ['https://app.example/cb'], client_name: 'anon' });
    const error = (await failure(() =>
      oauth.processDynamicClientRegistrationResponse(response),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause).toEqual([{ scheme: 'bearer', parameters: { realm: 'polar' } }]);
  });

  it('an unknown initial access token → challenge with error="invalid_token"', async () => {
    const response = await register(
      { redirect_uris: ['https://app.example/cb'], client_name: 'anon' },
      'polar_pat_doesnotexistdoesnotexistdoesnotexist',
    );
    const error = (await failure(() =>
      oauth.processDynamicClientRegistrationResponse(response),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause[0]).toMatchObject({
      scheme: 'bearer',
      parameters: { realm: 'polar', error: 'invalid_token' },
    });
  });
});

describe('RFC 7592: the registration read, replaced and deleted with its registration access token', () => {
  const call = (token: string, method: string, uri: string, body?: unknown) =>
    oauth.protectedResourceRequest(
      token,
      method,
      new URL(uri),
      body === undefined ? undefined : new Headers({ 'content-type': 'application/json' }),
      body === undefined ? undefined : JSON.stringify(body),
      insecure,
    );
  const documented = async (operationId: string, response: Response) => {
    const text = await response.text();
    const body = text === '' ? undefined : JSON.parse(text);
    expectDocumented(operationId, { status: response.status, headers: response.headers, body, text });
    return body;
  };

  it('registration → GET → PUT → GET → DELETE, then the token is refused with a bearer challenge', async () => {
    const { client } = await processAndDocument(
      await register(
        {
          redirect_uris: ['https://app.example/cb'],
          client_name: 'RFC 7592 e2e',
          scope: 'openid',
        },
        stack.demo.personal_access_token,
      ),
    );
    const token = client.registration_access_token as string;
    const uri = client.registration_client_uri as string;
    expect(token).toMatch(/^polar_crt_/);
    expect(uri).toBe(`${stack.demo.base_url}/v1/oauth2/register/${client.client_id}`);

    const read = await call(token, 'GET', uri);
    expect(read.status).toBe(200);
    expect(read.headers.get('cache-control')).toBe('no-store');
    const information = await documented('getClient', read);
    expect(information).toMatchObject({
      client_id: client.client_id,
      client_name: 'RFC 7592 e2e',
      scope: 'openid',
    });
    expect(information).not.toHaveProperty('client_secret');

    const replaced = await call(token, 'PUT', uri, {
      client_id: client.client_id,
      client_secret: client.client_secret,
      redirect_uris: ['https://app.example/cb', 'https://app.example/cb2'],
      client_name: 'RFC 7592 e2e, renamed',
    });
    expect(replaced.status).toBe(200);
    expect(await documented('updateClient', replaced)).toMatchObject({
      client_name: 'RFC 7592 e2e, renamed',
      redirect_uris: ['https://app.example/cb', 'https://app.example/cb2'],
    });
    expect(await documented('getClient', await call(token, 'GET', uri))).toMatchObject({
      client_name: 'RFC 7592 e2e, renamed',
    });

    const deleted = await call(token, 'DELETE', uri);
    expect(deleted.status).toBe(204);
    await documented('deleteClient', deleted);
    const error = (await failure(() => call(token, 'GET', uri))) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause[0]?.parameters).toMatchObject({ realm: 'polar', error: 'invalid_token' });
  });

  it('another client’s registration token is refused like an unknown one', async () => {
    const { client: mine } = await processAndDocument(
      await register(
        { redirect_uris: ['https://app.example/cb'], client_name: 'mine' },
        stack.demo.personal_access_token,
      ),
    );
    const { client: theirs } = await processAndDocument(
      await register(
        { redirect_uris: ['https://app.example/cb'], client_name: 'theirs' },
        stack.demo.personal_access_token,
      ),
    );
    const error = (await failure(() =>
      call(theirs.registration_access_token as string, 'GET', mine.registration_client_uri as string),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error.status).toBe(401);
    expect(error.cause[0]?.parameters.error).toBe('invalid_token');
  });
});

describe('RFC 6750 bearer challenges of the other operations, through protectedResourceRequest', () => {
  const url = (path: string) => new URL(path, stack.demo.base_url);
  const request = (token: string, method: string, path: string, body?: unknown) =>
    oauth.protectedResourceRequest(
      token,
      method,
      url(path),
      body === undefined ? undefined : new Headers({ 'content-type': 'application/json' }),
      body === undefined ? undefined : JSON.stringify(body),
      insecure,
    );

  it('DELETE a webhook endpoint: 204, then 404 ResourceNotFound (no challenge)', async () => {
    const path = `/v1/webhooks/endpoints/${stack.demo.webhook_endpoint_ids[2]}`;
    const first = await request(stack.demo.personal_access_token, 'DELETE', path);
    expect(first.status).toBe(204);
    const second = await request(stack.demo.personal_access_token, 'DELETE', path);
    expect(second.status).toBe(404);
    expect(await second.json()).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
  });

  it('a PAT without the scope → 403 challenge naming insufficient_scope and the scope required', async () => {
    const error = (await failure(() =>
      request(
        stack.demo.personal_access_token_without_scopes,
        'DELETE',
        `/v1/webhooks/endpoints/${stack.demo.webhook_endpoint_ids[2]}`,
      ),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(403);
    expect(error.cause[0]?.parameters).toMatchObject({ realm: 'polar', error: 'insufficient_scope' });
    expect(error.cause[0]?.parameters.scope?.split(' ')).toContain('webhooks:write');
  });

  it('an expired customer session on List Wallets → 401 challenge, invalid_token', async () => {
    const error = (await failure(() =>
      request(stack.demo.expired_customer_session_token, 'GET', '/v1/customer-portal/wallets/'),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause[0]?.parameters.error).toBe('invalid_token');
  });

  it('a customer session token on Create Subscription → 401 challenge without an error code', async () => {
    const error = (await failure(() =>
      request(stack.demo.customer_session_token, 'POST', '/v1/subscriptions/', {
        product_id: stack.demo.free_product_id,
        customer_id: stack.demo.customer_id,
      }),
    )) as oauth.WWWAuthenticateChallengeError;
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error.status).toBe(401);
    expect(error.cause).toEqual([{ scheme: 'bearer', parameters: { realm: 'polar' } }]);
  });

  it('a live session on List Wallets passes (no challenge) and answers the documented page', async () => {
    const response = await request(
      stack.demo.customer_session_token,
      'GET',
      '/v1/customer-portal/wallets/?limit=3',
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expectDocumented('listWallets', { status: 200, headers: response.headers, body: JSON.parse(text), text });
  });
});
