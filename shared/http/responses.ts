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

/** An error's answer, as `@middy/http-error-handler` renders it for the functions that use the stack. */
export const errorResult = (error: ApiError): ApiResult => json(error.statusCode, error.body, error.headers);
