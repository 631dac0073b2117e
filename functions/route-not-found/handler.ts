import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { MethodNotAllowed, RouteNotFound } from '#shared/domain/errors.ts';
import { type ApiResult, errorResult } from '#shared/http/responses.ts';
import { methodsForPath } from '#shared/http/routes.ts';
import { observed } from '#shared/observability/observed.ts';
import { markError } from '#shared/observability/telemetry.ts';
import { routedPaths } from '#shared/routed-paths.ts';

/**
 * Behind the HTTP API's `$default` route: every request no operation route takes. A path some
 * operation serves, asked with another method, is a 405 naming the allowed methods; anything else is
 * the contract's 404 (not API Gateway's own `{"message":"Not Found"}`). No credential is read.
 */
export const handler = observed(async (event: APIGatewayProxyEventV2): Promise<ApiResult> => {
  const allowed = methodsForPath(routedPaths, event.rawPath);
  const error = allowed.length > 0 ? new MethodNotAllowed(allowed) : new RouteNotFound();
  markError(String(error.body.error));
  return errorResult(error);
});
