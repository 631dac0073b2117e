import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createHandler } from '#functions/oauth-discovery/handler.ts';
import { routeRequest, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import { localIdTokenKeys } from '#shared/domain/id-token.ts';
import { parseIssuer } from '#shared/domain/issuer.ts';
import { CODE_CHALLENGE_METHODS } from '#shared/domain/oauth.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { operations } from '#shared/operations.ts';
import { authorizationServerMetadata } from '#shared/services/oauth-metadata.ts';

describe('authorization server metadata (RFC 8414 §2)', () => {
  const issuer = 'https://api.example.com';
  const metadata = authorizationServerMetadata(issuer);

  it('names the issuer it is given, with no trailing slash, and every endpoint on it', () => {
    expect(metadata.issuer).toBe(issuer);
    const endpoints = Object.entries(metadata).filter(([field]) => field.endsWith('_endpoint'));
    expect(endpoints.length).toBeGreaterThan(0);
    for (const [field, url] of endpoints) {
      expect(String(url).startsWith(`${issuer}/v1/oauth2/`), field).toBe(true);
      // Each is a route this deployment serves.
      const path = String(url).slice(issuer.length);
      expect(
        operations.some((operation) => operation.path === path),
        field,
      ).toBe(true);
    }
    expect(metadata.registration_endpoint).toBe(`${issuer}/v1/oauth2/register`);
  });

  it('announces S256 only, the code flow only, and the scopes of Create Client', () => {
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(CODE_CHALLENGE_METHODS).not.toContain('plain');
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
    expect(metadata.scopes_supported).toEqual(ALL_SCOPES);
    expect(metadata.token_endpoint_auth_methods_supported).toEqual([
      'client_secret_basic',
      'client_secret_post',
      'none',
    ]);
  });
});

describe('OpenID Provider metadata (OpenID Connect Discovery 1.0 §3)', () => {
  const metadata = authorizationServerMetadata('https://api.example.com');

  it('has every REQUIRED field, and says outright what it does not support', () => {
    expect(metadata).toMatchObject({
      issuer: 'https://api.example.com',
      authorization_endpoint: 'https://api.example.com/v1/oauth2/authorize',
      token_endpoint: 'https://api.example.com/v1/oauth2/token',
      jwks_uri: 'https://api.example.com/.well-known/jwks.json',
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      // Core §15.1 and Discovery §3: RS256 must be among them.
      id_token_signing_alg_values_supported: ['RS256'],
      userinfo_endpoint: 'https://api.example.com/v1/oauth2/userinfo',
      registration_endpoint: 'https://api.example.com/v1/oauth2/register',
      // Discovery's default for this one is true: it must be said.
      request_uri_parameter_supported: false,
      request_parameter_supported: false,
      claims_parameter_supported: false,
    });
    expect(metadata.scopes_supported).toContain('openid');
    for (const claim of ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'email'])
      expect(metadata.claims_supported, claim).toContain(claim);
  });
});

describe('the issuer as configured (parseIssuer)', () => {
  it.each([
    ['https://api.example.com', 'https://api.example.com'],
    ['https://api.example.com/', 'https://api.example.com'],
    [
      'https://abc123.execute-api.eu-west-1.amazonaws.com/',
      'https://abc123.execute-api.eu-west-1.amazonaws.com',
    ],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
    ['http://localhost:4000/', 'http://localhost:4000'],
  ])('%s → %s', (value, expected) => expect(parseIssuer(value)).toBe(expected));

  it.each([
    'http://api.example.com',
    'api.example.com',
    'https://api.example.com/?a=1',
    'https://a.example/#x',
    'https://u:p@a.example',
  ])('refuses %s', (value) => expect(() => parseIssuer(value)).toThrow(/issuer/));
});

describe('the discovery function', () => {
  const keys = localIdTokenKeys();
  const get = async (
    path: string,
    host: string,
    deps: Parameters<typeof createHandler>[0] = { issuer: 'https://api.example.com', idTokenKeys: keys },
  ) => {
    const handler = createHandler(deps);
    const route = routeRequest('GET', path);
    if (!route) throw new Error('no route');
    const event = toApiGatewayEvent(
      { method: 'GET', url: path, httpVersion: '1.1', rawHeaders: ['host', host], socket: {} },
      Buffer.alloc(0),
      { routeKey: route.routeKey, pathParameters: route.pathParameters },
    );
    expect(route.target.name).toBe('oauth-discovery');
    return (await handler(event, {} as Context)) as { statusCode: number; body: string };
  };

  it('names the configured issuer, whatever host it was asked on', async () => {
    for (const [path, host] of [
      ['/.well-known/oauth-authorization-server', 'attacker.example'],
      ['/.well-known/openid-configuration/', 'localhost:1234'],
    ] as const) {
      const answer = await get(path, host);
      expect(answer.statusCode).toBe(200);
      expect(JSON.parse(answer.body).issuer).toBe('https://api.example.com');
    }
  });

  it('serves the JWKS: the public half of the signing key, under the kid ID Tokens name', async () => {
    const answer = await get('/.well-known/jwks.json', 'attacker.example');
    expect(answer.statusCode).toBe(200);
    const jwks = JSON.parse(answer.body) as { keys: Record<string, string>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: keys.signingKeyId() });
    // Never a private member (RFC 7518 §6.3.2).
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(jwks.keys[0]).not.toHaveProperty(member);
  });

  it('without a configured issuer: 503 and a log line, never an issuer from the request', async () => {
    const answer = await get('/.well-known/openid-configuration', 'api.example.com', { idTokenKeys: keys });
    expect(answer.statusCode).toBe(503);
    expect(answer.body).not.toContain('api.example.com');
  });

  it('answers a path below a document with the contract 404', async () => {
    const deeper = await get('/.well-known/oauth-authorization-server/tenant', 'api.example.com');
    expect(deeper.statusCode).toBe(404);
    expect(JSON.parse(deeper.body)).toEqual({ error: 'NotFound', detail: 'Not Found' });
  });
});
