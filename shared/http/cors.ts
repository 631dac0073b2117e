/**
 * Cross-origin access, for customer-portal calls from customers' browsers (List Wallets with a
 * customer session token). The HTTP API answers preflights itself and adds these headers to every
 * answer (`infra/stack.ts`); the local server does the same from the same policy
 * (`scripts/local/server.ts`).
 *
 * Credentials are bearer tokens in the `Authorization` header, never cookies, so no credentialed
 * CORS: a page can use only a token it already holds, and `*` exposes nothing a script could not
 * already read with that token.
 */
import { operations } from '../operations.ts';

export interface CorsPolicy {
  /** Exact origins (`https://portal.example.com`), or `*` alone. */
  allowOrigins: readonly string[];
  allowMethods: readonly string[];
  /** Lowercase request headers a page may send. */
  allowHeaders: readonly string[];
  /** Lowercase response headers a page may read beyond the CORS-safelisted ones. */
  exposeHeaders: readonly string[];
  maxAgeSeconds: number;
}

/** Origins every stage allows unless configured otherwise (`-c corsAllowOrigins=...`). */
export const DEFAULT_ALLOW_ORIGINS = ['*'] as const;

const ORIGIN = /^https?:\/\/[a-z0-9.-]+(?::\d{1,5})?$/;

/** `*`, or a comma-separated list (or array) of origins, each `scheme://host[:port]` in lowercase. */
export function parseAllowOrigins(value: unknown): string[] {
  const origins = (Array.isArray(value) ? value : String(value ?? '').split(','))
    .map((origin) => String(origin).trim())
    .filter((origin) => origin !== '');
  if (origins.length === 0) throw new Error('CORS: no allowed origin configured');
  if (origins.includes('*')) {
    if (origins.length > 1) throw new Error('CORS: `*` cannot be combined with other origins');
    return ['*'];
  }
  for (const origin of origins) {
    if (!ORIGIN.test(origin))
      throw new Error(`CORS: not an origin (scheme://host[:port], lowercase): ${origin}`);
  }
  return origins;
}

export function corsPolicy(allowOrigins: readonly string[]): CorsPolicy {
  return {
    allowOrigins,
    allowMethods: [...new Set(operations.map((operation) => operation.method as string))].sort(),
    allowHeaders: ['authorization', 'content-type', 'idempotency-key', 'polar-version'],
    exposeHeaders: ['retry-after', 'www-authenticate'],
    // API Gateway's maximum; browsers cap it lower (Chromium: 2 hours).
    maxAgeSeconds: 86_400,
  };
}

/** The `Access-Control-Allow-Origin` value for a request's `Origin`, or undefined when not allowed. */
export function allowedOrigin(policy: CorsPolicy, origin: string | undefined): string | undefined {
  if (origin === undefined) return undefined;
  if (policy.allowOrigins.includes('*')) return '*';
  return policy.allowOrigins.includes(origin.toLowerCase()) ? origin : undefined;
}
