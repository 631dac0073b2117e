import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { ApiError } from '../domain/errors.ts';

export type ApiResult = APIGatewayProxyStructuredResultV2;

export const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResult => ({
  statusCode,
  headers: { 'Content-Type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

export const noContent = (headers: Record<string, string> = {}): ApiResult => ({ statusCode: 204, headers });

/**
 * OAuth answers must not be cached: registrations carry secrets, and their errors and the
 * credential refusals are as private (RFC 7591 §3.2, RFC 7592 §2, RFC 6749 §5.1, RFC 6750 §3).
 */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

/**
 * 303 See Other to where the user's agent goes next (RFC 9700 §4.12: never 307, which would repeat
 * a POST and its credential there), the address also in a JSON body for agents that do not follow.
 */
export const seeOther = (location: string): ApiResult =>
  json(303, { redirect_to: location }, { Location: location, ...NO_STORE });

/**
 * Headers every HTTP answer carries, successes and errors, the `$default` route's 404 and 405
 * included (`observed` adds them, which every HTTP function's handler passes through): no content
 * sniffing, no referrer from a page an answer is shown in, no framing and nothing loaded by a JSON
 * answer opened as a page, no caching unless the function says otherwise (discovery, the
 * reference's assets). A header the function set itself is kept. docs/api.md lists them.
 */
const ALWAYS = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' } as const;
const UNLESS_SET = {
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
} as const;

export function withApiHeaders(result: ApiResult): ApiResult {
  const headers: Record<string, string | number | boolean> = { ...result.headers };
  const present = new Set(Object.keys(headers).map((name) => name.toLowerCase()));
  for (const [name, value] of Object.entries(UNLESS_SET)) {
    if (!present.has(name.toLowerCase())) headers[name] = value;
  }
  for (const [name, value] of Object.entries(ALWAYS)) {
    for (const key of Object.keys(headers)) if (key.toLowerCase() === name.toLowerCase()) delete headers[key];
    headers[name] = value;
  }
  return { ...result, headers };
}

/** An error's answer, as `@middy/http-error-handler` renders it for the functions that use the stack. */
export const errorResult = (error: ApiError): ApiResult => json(error.statusCode, error.body, error.headers);
