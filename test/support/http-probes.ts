/**
 * Properties of the HTTP front door that hold for any request, run by the fuzz smoke over the local
 * server (fast tier) and by the HTTP fuzz suite over the whole local stack (`npm run test:fuzz`).
 */
import fc from 'fast-check';
import { expect } from 'vitest';

export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  raw: string;
  body: unknown;
}

/** One request to the API under test, its body parsed as JSON when it is JSON. */
export type Send = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
) => Promise<HttpReply>;

export interface ProbeOptions {
  send: Send;
  /** A credential every probe carries (so that a 401 cannot hide a routing answer). */
  token: string;
  numRuns: number;
  seed?: number;
}

/** Fetches `base` + path, never following a redirect (a 303 is an answer under test). */
export function sendTo(base: () => string): Send {
  return async (method, path, headers, body) => {
    const response = await fetch(`${base()}${path}`, {
      method,
      headers,
      redirect: 'manual',
      ...(body !== undefined && method !== 'GET' ? { body } : {}),
    });
    const raw = await response.text();
    let parsed: unknown;
    try {
      parsed = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      parsed = raw;
    }
    return { status: response.status, headers: Object.fromEntries(response.headers), raw, body: parsed };
  };
}

/** Unknown routes and wrong methods: 404 NotFound / 405 MethodNotAllowed in JSON, never a 5xx. */
export async function unknownRoutesRefused({ send, token, numRuns, seed }: ProbeOptions): Promise<void> {
  const segment = fc.oneof(
    fc.constantFrom(
      'v1',
      'subscriptions',
      'oauth2',
      'register',
      'webhooks',
      'endpoints',
      'customer-portal',
      'wallets',
      '',
    ),
    fc.string({ maxLength: 8 }).map(encodeURIComponent),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
      fc.array(segment, { minLength: 1, maxLength: 5 }),
      async (method, segments) => {
        const path = `/${segments.join('/')}`;
        const reply = await send(method, path, { authorization: `Bearer ${token}` });
        const where = `${method} ${path} → ${reply.status} ${reply.raw.slice(0, 200)}`;
        expect(reply.status, where).toBeLessThan(500);
        // Deployed HTTP APIs stamp every answer with a request id; the local one does too.
        expect(reply.headers['apigw-requestid'], where).toBeTruthy();
        if (reply.status === 404 || reply.status === 405) {
          expect(reply.headers['content-type'], where).toMatch(/^application\/json/);
          expect(reply.body, where).toEqual({
            error: reply.status === 404 ? 'NotFound' : 'MethodNotAllowed',
            detail: expect.any(String),
          });
        }
      },
    ),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
}

/** Bodies that are not valid UTF-8 are refused like any other bad JSON: a 422 in JSON, never a 5xx. */
export async function nonUtf8BodiesRefused({ send, token, numRuns, seed }: ProbeOptions): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ minLength: 1, maxLength: 64 }),
      fc.constantFrom('/v1/oauth2/register', '/v1/subscriptions/'),
      async (garbage, path) => {
        const body = Buffer.concat([
          Buffer.from('{"client_name":"'),
          Buffer.from(garbage),
          Buffer.from('"}'),
        ]);
        const reply = await send(
          'POST',
          path,
          { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        );
        expect(reply.status, reply.raw).toBe(422);
        expect(reply.headers['content-type']).toMatch(/^application\/json/);
      },
    ),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
}
