import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { RouteNotFound } from '#shared/domain/errors.ts';
import { serveReference } from '#shared/http/api-reference.ts';
import { type ApiResult, errorResult } from '#shared/http/responses.ts';
import { observed } from '#shared/observability/observed.ts';
import { markError } from '#shared/observability/telemetry.ts';

/** `GET /openapi.json` and `GET /docs` (with its assets): no credential, no table. */
export const handler = observed(async (event: APIGatewayProxyEventV2): Promise<ApiResult> => {
  const result = serveReference(event.rawPath, event.headers ?? {});
  if (result) return result;
  const error = new RouteNotFound();
  markError(String(error.body.error));
  return errorResult(error);
});
