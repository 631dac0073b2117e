/**
 * Wraps a function's handler so that each request runs in its telemetry scope and leaves one line
 * (`telemetry.ts`), written after the answer exists; the line never changes the answer. Every HTTP
 * function's answer passes here, so the headers every answer carries are added here too
 * (`withApiHeaders`).
 */
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { Principal } from '../domain/principals.ts';
import { functionOfRouteKey } from '../generated/routes.ts';
import { type ApiResult, withApiHeaders } from '../http/responses.ts';
import { emitRequest, inRequestScope } from './telemetry.ts';

type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<ApiResult>;

/** The function a route key belongs to (both spellings of each route), generated from the route table. */
const operationOfRoute = (routeKey: string): string =>
  Object.hasOwn(functionOfRouteKey, routeKey) ? (functionOfRouteKey[routeKey] as string) : 'unknown';

export function observed(
  handler: Handler,
  principalOf: (event: APIGatewayProxyEventV2) => Principal | undefined = () => undefined,
): Handler {
  // Per handler, not per module: on Lambda one process holds one handler, but `npm start` serves
  // every function from one process, and each function's first request is its own cold start.
  let coldStart = true;
  return async (event, context) => {
    const started = performance.now();
    const cold = coldStart;
    coldStart = false;
    const { telemetry, result } = inRequestScope(
      () => handler(event, context),
      event.requestContext?.requestId,
    );
    const answered = await result;
    const response = answered && withApiHeaders(answered);
    const principal = principalOf(event);
    emitRequest(
      {
        operation: operationOfRoute(event.routeKey),
        method: event.requestContext?.http?.method ?? '',
        route: event.routeKey,
        status: response?.statusCode ?? 500,
        durationMs: performance.now() - started,
        coldStart: cold,
        requestId: event.requestContext?.requestId,
        awsRequestId: context?.awsRequestId,
        principalKind: principal?.kind,
        organizationIds: principal ? organizationsOf(principal) : undefined,
      },
      telemetry,
    );
    return response;
  };
}

/** The organizations a request acted for: a registration belongs to a user, not an organization. */
function organizationsOf(principal: Principal): readonly string[] | undefined {
  switch (principal.kind) {
    case 'user':
      return principal.organizationIds;
    case 'customer':
      return [principal.organizationId];
    case 'client_registration':
    case 'oauth_client':
      return undefined;
  }
}
