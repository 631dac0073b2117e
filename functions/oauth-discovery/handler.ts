import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { baseUrlOf } from '#shared/domain/base-url.ts';
import { RouteNotFound } from '#shared/domain/errors.ts';
import { type ApiResult, errorResult, json } from '#shared/http/responses.ts';
import { GREEDY_PARAMETER } from '#shared/http/routes.ts';
import { observed } from '#shared/observability/observed.ts';
import { markError } from '#shared/observability/telemetry.ts';
import { authorizationServerMetadata } from '#shared/services/oauth-metadata.ts';

/** Public and the same for every caller of a host: caches may keep it an hour. */
const CACHEABLE = { 'Cache-Control': 'public, max-age=3600', Vary: 'Host' };

/** Both well-known documents (RFC 8414, OpenID Connect Discovery): no credential, no table. */
export const handler = observed(async (event: APIGatewayProxyEventV2): Promise<ApiResult> => {
  // The greedy twin serves the trailing slash; a longer path names no document.
  if (event.pathParameters?.[GREEDY_PARAMETER]) {
    const error = new RouteNotFound();
    markError(String(error.body.error));
    return errorResult(error);
  }
  return json(200, authorizationServerMetadata(baseUrlOf(event.headers?.host)), CACHEABLE);
});
