/**
 * The functions behind routes that are not operations of the OpenAPI document, and the `$default`
 * route's. Plain data, re-exported by `shared/operations.ts`; kept apart so that the generator
 * (scripts/generate.ts) reads them without loading the generated route table it writes.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The function behind the HTTP API's `$default` route: it answers every request no operation route
 * takes, with the contract's 404 (unknown path) or 405 (known path, another method). It touches no
 * table.
 */
export const routeNotFound = {
  name: 'route-not-found',
  entry: 'functions/route-not-found/handler.ts',
} as const;

/**
 * The API reference, served by one function that touches no table and reads no credential:
 * `GET /openapi.json` (the document the validators are generated from) and `GET /docs` (Swagger UI,
 * with its assets under `/docs/`, bundled into the function: no CDN).
 */
export const apiReference = {
  name: 'api-reference',
  entry: 'functions/api-reference/handler.ts',
  routes: [
    { method: 'GET', path: '/openapi.json' },
    { method: 'GET', path: '/docs' },
  ],
} as const;

/**
 * OAuth 2.0 authorization server metadata (RFC 8414), its OpenID Connect Discovery twin and the JWKS
 * of the ID Tokens, at the API's root as the specifications place them (outside `/v1` and outside
 * the OpenAPI document, like the reference). One function that touches no table and reads no
 * credential; deployed, it reads the public halves of the ID Token keys (`kms:GetPublicKey`).
 */
export const oauthDiscovery = {
  name: 'oauth-discovery',
  entry: 'functions/oauth-discovery/handler.ts',
  routes: [
    { method: 'GET', path: '/.well-known/oauth-authorization-server' },
    { method: 'GET', path: '/.well-known/openid-configuration' },
    { method: 'GET', path: '/.well-known/jwks.json' },
  ],
} as const;

/** A function behind routes that are not operations of the OpenAPI document: no table, no credential. */
export interface DocumentFunction {
  name: string;
  entry: string;
  routes: readonly { method: HttpMethod; path: string }[];
}

export const documentFunctions: readonly DocumentFunction[] = [apiReference, oauthDiscovery];
