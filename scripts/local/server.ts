/**
 * A plain `node:http` stand-in for API Gateway: selects among the routes the stack declares as HTTP
 * APIs do (exact route, then greedy `{proxy+}`, then `$default`), answers CORS preflights and adds
 * CORS headers from the stack's policy, and invokes the very handlers the stack deploys.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { allowedOrigin, type CorsPolicy } from '../../shared/http/cors.ts';
import type { Route } from '../../shared/http/routes.ts';
import { routeNotFound } from '../../shared/operations.ts';
import {
  fromLambdaResult,
  gatewayNotFoundResponse,
  type HttpResponse,
  internalErrorResponse,
  LOCAL_ACCOUNT_ID,
  type LocalFunction,
  newApiRequestId,
  payloadTooLargeResponse,
  readBody,
  routeRequest,
  stackRoutes,
  toApiGatewayEvent,
} from './apigw.ts';

export type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => unknown;

export interface ApiServerOptions {
  port: number;
  host?: string;
  loadHandler: (fn: LocalFunction) => Promise<LambdaHandler>;
  /** The routes to select among; default: the stack's. */
  routes?: readonly Route<LocalFunction>[];
  /** The `$default` route's function; default: the stack's. `null`: no `$default` route. */
  defaultFunction?: LocalFunction | null;
  /** CORS as the HTTP API is configured; none: no preflight answers, no CORS headers. */
  cors?: CorsPolicy;
  /** No per-request log line. */
  quiet?: boolean;
  /** Writes the per-request line instead of the plain `METHOD path status ms` one (`npm start`'s terminal). */
  logRequest?: (request: {
    at: Date;
    method: string;
    path: string;
    status: number;
    ms: number;
    operation: string;
  }) => void;
  /** Drives `context.getRemainingTimeInMillis()`; match the stack's function timeout. */
  functionTimeoutMs?: number;
  region?: string;
}

export interface ApiServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

function lambdaContext(operation: LocalFunction, timeoutMs: number, region: string): Context {
  const deadline = Date.now() + timeoutMs;
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/');
  const legacy = () => {
    throw new Error('context.done/succeed/fail are not supported: return or throw from an async handler');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: operation.name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${LOCAL_ACCOUNT_ID}:function:${operation.name}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${operation.name}`,
    logStreamName: `${day}/[$LATEST]${randomBytes(16).toString('hex')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: legacy,
    fail: legacy,
    succeed: legacy,
  };
}

function send(res: ServerResponse, response: HttpResponse, method: string): void {
  res.statusCode = response.statusCode;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (response.cookies.length > 0) res.setHeader('set-cookie', response.cookies);
  const bodyless = method === 'HEAD' || response.statusCode === 204 || response.statusCode === 304;
  if (!bodyless) res.setHeader('content-length', response.body.length);
  res.end(bodyless ? undefined : response.body);
}

/** A CORS preflight: OPTIONS with `Origin` and `Access-Control-Request-Method`. */
const isPreflight = (req: IncomingMessage) =>
  req.method === 'OPTIONS' &&
  req.headers.origin !== undefined &&
  req.headers['access-control-request-method'] !== undefined;

/** API Gateway answers a preflight itself, from the API's CORS configuration, before any route. */
function preflightResponse(policy: CorsPolicy, req: IncomingMessage): HttpResponse {
  const origin = allowedOrigin(policy, req.headers.origin);
  const method = String(req.headers['access-control-request-method']).toUpperCase();
  const requested = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((header) => header.trim().toLowerCase())
    .filter((header) => header !== '');
  const allowed =
    origin !== undefined &&
    policy.allowMethods.includes(method) &&
    requested.every((header) => policy.allowHeaders.includes(header));
  const headers: Record<string, string> = allowed
    ? {
        'access-control-allow-origin': origin,
        'access-control-allow-methods': policy.allowMethods.join(','),
        'access-control-allow-headers': policy.allowHeaders.join(','),
        'access-control-max-age': String(policy.maxAgeSeconds),
      }
    : {};
  return { statusCode: 204, headers, cookies: [], body: Buffer.alloc(0) };
}

/** On a cross-origin answer API Gateway replaces whatever CORS headers the function set with its own. */
function withCors(policy: CorsPolicy, req: IncomingMessage, response: HttpResponse): HttpResponse {
  const headers = Object.fromEntries(
    Object.entries(response.headers).filter(([name]) => !name.startsWith('access-control-')),
  );
  const origin = allowedOrigin(policy, req.headers.origin);
  if (origin !== undefined) {
    headers['access-control-allow-origin'] = origin;
    headers['access-control-expose-headers'] = policy.exposeHeaders.join(',');
    if (origin !== '*') headers.vary = headers.vary ? `${headers.vary}, origin` : 'origin';
  }
  return { ...response, headers };
}

export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const host = options.host ?? '127.0.0.1';
  const routes = options.routes ?? stackRoutes;
  const defaultFunction = options.defaultFunction === undefined ? routeNotFound : options.defaultFunction;
  const timeoutMs = options.functionTimeoutMs ?? 29_000;
  const region = options.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const handlers = new Map<string, Promise<LambdaHandler>>();

  // Lazy and once per function: the caller's import runs module-scope code (SDK clients reading env).
  const handlerFor = (operation: LocalFunction) => {
    let loaded = handlers.get(operation.name);
    if (!loaded) {
      loaded = options.loadHandler(operation).then((handler) => {
        if (typeof handler !== 'function')
          throw new Error(`${operation.entry} does not export a handler function`);
        return handler;
      });
      // A failed import is retried on the next request rather than cached forever.
      loaded.catch(() => handlers.delete(operation.name));
      handlers.set(operation.name, loaded);
    }
    return loaded;
  };

  /** The function each request went to, for its log line (the gateway's own answers have none). */
  const operationOf = new WeakMap<IncomingMessage, string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<HttpResponse> => {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = (req.url ?? '/').split('?')[0] as string;
    if (options.cors && isPreflight(req)) {
      req.resume();
      return preflightResponse(options.cors, req);
    }
    const route = routeRequest(method, path, routes, defaultFunction);
    if (!route) {
      req.resume();
      return gatewayNotFoundResponse();
    }
    const body = await readBody(req);
    if (body === 'too-large') {
      // Stop receiving the rest of a huge upload: answer, then drop the connection.
      res.setHeader('connection', 'close');
      req.resume();
      return payloadTooLargeResponse();
    }
    const requestId = res.getHeader('apigw-requestid') as string;
    const event = toApiGatewayEvent(req, body, {
      routeKey: route.routeKey,
      pathParameters: route.pathParameters,
      requestId,
    });
    const operation = route.target;
    operationOf.set(req, operation.name);
    try {
      const handler = await handlerFor(operation);
      const result = await handler(event, lambdaContext(operation, timeoutMs, region));
      return fromLambdaResult(result);
    } catch (error) {
      console.error(`[${operation.name}] ${method} ${path} failed:`, error);
      return internalErrorResponse();
    }
  };

  const server = createServer((req, res) => {
    const started = performance.now();
    const method = (req.method ?? 'GET').toUpperCase();
    const path = (req.url ?? '/').split('?')[0];
    // Deployed HTTP APIs stamp every response with their request id.
    res.setHeader('apigw-requestid', newApiRequestId());
    handle(req, res)
      .catch((error: unknown) => {
        console.error(`${method} ${path} failed in the local API server:`, error);
        return internalErrorResponse();
      })
      .then((answer) => {
        const response = options.cors && !isPreflight(req) ? withCors(options.cors, req, answer) : answer;
        send(res, response, method);
        if (options.logRequest) {
          options.logRequest({
            at: new Date(),
            method,
            path: path as string,
            status: response.statusCode,
            ms: performance.now() - started,
            operation: operationOf.get(req) ?? 'apigw',
          });
        } else if (!options.quiet) {
          const ms = (performance.now() - started).toFixed(1);
          console.log(`${method} ${path} ${response.statusCode} ${ms}ms`);
        }
      });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Idle keep-alive sockets would hold close() open; in-flight requests get a moment to finish.
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 1_000).unref();
      }),
  };
}
