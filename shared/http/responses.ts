import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { ApiError } from '../domain/errors.ts';

export type ApiResult = APIGatewayProxyStructuredResultV2;

export const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResult => ({
  statusCode,
  headers: { 'Content-Type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

export const noContent = (): ApiResult => ({ statusCode: 204, headers: {} });

/** An error's answer, as `@middy/http-error-handler` renders it for the functions that use the stack. */
export const errorResult = (error: ApiError): ApiResult => json(error.statusCode, error.body, error.headers);
