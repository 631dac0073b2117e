/**
 * Checks a live response against what the OpenAPI document declares for that
 * operation and status: the documented status exists, the JSON body validates
 * against its schema (compiled here, at test time), and the content type is JSON.
 */
import { expect } from 'vitest';
import { createSchemaAjv, responseSchema } from '#scripts/openapi.ts';

const ajv = createSchemaAjv();
const cache = new Map<string, ReturnType<typeof ajv.compile>>();

export interface HttpReply {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export async function fetchJson(url: string, init: RequestInit = {}): Promise<HttpReply> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body, text };
}

export function expectDocumented(operationId: string, reply: HttpReply): void {
  if (reply.status === 204) {
    expect(reply.text).toBe('');
    return;
  }
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
  const key = `${operationId} ${reply.status}`;
  let validate = cache.get(key);
  if (!validate) {
    validate = ajv.compile(responseSchema(operationId, reply.status));
    cache.set(key, validate);
  }
  const valid = validate(reply.body);
  expect(valid ? [] : validate.errors, `${key} body does not match the OpenAPI document`).toEqual([]);
}

/** `expectDocumented` for an in-process reply (`test/support/world.ts`); returns the reply. */
export function documentedReply<
  R extends { status: number; headers: Record<string, string>; body: unknown; raw?: string },
>(operationId: string, reply: R): R {
  expectDocumented(operationId, {
    status: reply.status,
    headers: new Headers(reply.headers),
    body: reply.body,
    text: reply.raw ?? '',
  });
  return reply;
}
