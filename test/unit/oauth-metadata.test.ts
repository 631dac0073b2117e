import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { routeRequest, toApiGatewayEvent } from '#scripts/local/apigw.ts';
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

describe('the discovery function', () => {
  const get = async (path: string, host: string) => {
    const { handler } = await import('#functions/oauth-discovery/handler.ts');
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

  it('names the issuer of the host it was asked on: https, plain http only on loopback', async () => {
    const remote = await get('/.well-known/oauth-authorization-server', 'api.example.com');
    expect(JSON.parse(remote.body).issuer).toBe('https://api.example.com');
    const local = await get('/.well-known/openid-configuration/', 'localhost:1234');
    expect(JSON.parse(local.body).issuer).toBe('http://localhost:1234');
  });

  it('answers a path below a document with the contract 404', async () => {
    const deeper = await get('/.well-known/oauth-authorization-server/tenant', 'api.example.com');
    expect(deeper.statusCode).toBe(404);
    expect(JSON.parse(deeper.body)).toEqual({ error: 'NotFound', detail: 'Not Found' });
  });
});
