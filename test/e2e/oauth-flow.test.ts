/**
 * The authorization server judged by a standard client library, `oauth4webapi`, over HTTP against
 * the local API: every request is built and every answer accepted only by the library's own
 * functions (the local API is plain http on 127.0.0.1, so each call opts in with
 * `allowInsecureRequests`).
 */
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '#scripts/local/stack.ts';
import { fetchJson } from '../support/contract.ts';
import { startLocalApi } from '../support/local-api.ts';

let stack: LocalStack;
let issuer: URL;
beforeAll(async () => {
  stack = await startLocalApi('oauth-flow');
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
