/**
 * What API Gateway (HTTP API, Lambda proxy integration, payload format 2.0)
 * does around a Lambda handler: route matching, request → event, result →
 * HTTP response. Pure functions, so the local server stays a thin shell.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { DEFAULT_ROUTE_KEY, type Route, routesOf, selectRoute } from '../../shared/http/routes.ts';
import { documentFunctions, operations, routeNotFound } from '../../shared/operations.ts';

/** API Gateway HTTP APIs reject larger request payloads before invoking anything. */
export const MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024;

export const LOCAL_ACCOUNT_ID = '123456789012';
export const LOCAL_API_ID = 'localapi00';

const json = { 'content-type': 'application/json' } as const;

export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string>;
  /** Each becomes its own `Set-Cookie` header. */
  cookies: string[];
  body: Buffer;
}

const jsonResponse = (statusCode: number, payload: unknown): HttpResponse => ({
  statusCode,
  headers: { ...json },
  cookies: [],
  body: Buffer.from(JSON.stringify(payload)),
});

/** What API Gateway itself answers when no route, not even `$default`, takes a request. */
export const gatewayNotFoundResponse = () => jsonResponse(404, { message: 'Not Found' });
export const payloadTooLargeResponse = () =>
  jsonResponse(413, { error: 'PayloadTooLarge', detail: 'Request body too large' });
export const internalErrorResponse = () =>
  jsonResponse(500, { error: 'InternalServerError', detail: 'Internal Server Error' });

// ---------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------

/** A function the local API can invoke: its name and its handler module. */
export interface LocalFunction {
  name: string;
  entry: string;
}

/** The routes the stack declares (shared/http/routes.ts), each to its function: the operations', the reference's, discovery's. */
export const stackRoutes: readonly Route<LocalFunction>[] = [
  ...routesOf(operations),
  ...documentFunctions.flatMap((fn) => routesOf(fn.routes).map((route) => ({ ...route, target: fn }))),
];

export interface RoutedRequest {
  target: LocalFunction;
  routeKey: string;
  pathParameters: Record<string, string>;
}

/**
 * The function API Gateway invokes for a request: the most specific route of `routes`, else the
 * `$default` route's function, else none (API Gateway's own 404).
 */
export function routeRequest(
  method: string,
  path: string,
  routes: readonly Route<LocalFunction>[] = stackRoutes,
  defaultFunction: LocalFunction | null = routeNotFound,
): RoutedRequest | undefined {
  const selected = selectRoute(routes, method, path);
  if (selected) {
    return {
      target: selected.route.target,
      routeKey: selected.route.routeKey,
      pathParameters: selected.pathParameters,
    };
  }
  return defaultFunction
    ? { target: defaultFunction, routeKey: DEFAULT_ROUTE_KEY, pathParameters: {} }
    : undefined;
}

// ---------------------------------------------------------------------------
// Request → event
// ---------------------------------------------------------------------------

/** Read the body, giving up (without buffering the rest) once it exceeds `limit`. */
export function readBody(
  req: IncomingMessage,
  limit = MAX_REQUEST_BODY_BYTES,
): Promise<Buffer | 'too-large'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve('too-large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        chunks.length = 0;
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * HTTP APIs pass these media types as text and base64-encode everything else,
 * a missing Content-Type and form bodies included (observed on AWS; the docs
 * only say "binary"). Bodies that are not valid UTF-8 are base64 regardless.
 */
function isTextMediaType(contentType: string | undefined): boolean {
  const media = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!media) return false;
  return (
    media.startsWith('text/') ||
    media === 'application/json' ||
    media === 'application/xml' ||
    media === 'application/javascript'
  );
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function encodeRequestBody(
  body: Buffer,
  contentType: string | undefined,
): { body?: string; isBase64Encoded: boolean } {
  if (body.length === 0) return { isBase64Encoded: false };
  if (isTextMediaType(contentType)) {
    try {
      return { body: utf8.decode(body), isBase64Encoded: false };
    } catch {
      // Falls through to base64.
    }
  }
  return { body: body.toString('base64'), isBase64Encoded: true };
}

/** Hop-by-hop headers end at API Gateway's front door. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

/** Form-urlencoded decoding (`+` is a space), as API Gateway applies to query strings. */
function decodeQueryComponent(value: string): string {
  const spaced = value.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

export function parseQueryString(raw: string): Record<string, string> | undefined {
  const result: Record<string, string> = {};
  let any = false;
  for (const piece of raw.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const key = decodeQueryComponent(eq === -1 ? piece : piece.slice(0, eq));
    const value = eq === -1 ? '' : decodeQueryComponent(piece.slice(eq + 1));
    // HTTP APIs have no multi-value map: repeated keys arrive comma-joined.
    result[key] = Object.hasOwn(result, key) ? `${result[key]},${value}` : value;
    any = true;
  }
  return any ? result : undefined;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `22/Nov/2026:08:00:00 +0000`, the CLF time API Gateway puts in `requestContext.time`. */
export function formatRequestTime(epochMs: number): string {
  const d = new Date(epochMs);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(
    d.getUTCMinutes(),
  )}:${two(d.getUTCSeconds())} +0000`;
}

/** API Gateway request ids look like `Zw8ieiMoIAMEVmw=`. */
export const newApiRequestId = () => randomBytes(11).toString('base64');

export interface RequestLike {
  method?: string | undefined;
  url?: string | undefined;
  httpVersion: string;
  rawHeaders: string[];
  socket: { remoteAddress?: string | undefined; localPort?: number | undefined; encrypted?: boolean };
}

export interface EventOptions {
  routeKey: string;
  pathParameters?: Record<string, string>;
  requestId?: string;
  now?: number;
}

export function toApiGatewayEvent(
  req: RequestLike,
  body: Buffer,
  options: EventOptions,
): APIGatewayProxyEventV2 {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const rawPath = q === -1 ? url : url.slice(0, q);
  const rawQueryString = q === -1 ? '' : url.slice(q + 1);
  const now = options.now ?? Date.now();
  const requestId = options.requestId ?? newApiRequestId();
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');

  // rawHeaders keeps every repetition, which Node's `headers` object collapses or drops.
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] as string).toLowerCase();
    const value = req.rawHeaders[i + 1] as string;
    if (HOP_BY_HOP.has(name)) continue;
    if (name === 'cookie') {
      cookies.push(
        ...value
          .split(';')
          .map((c) => c.trim())
          .filter((c) => c !== ''),
      );
      continue;
    }
    headers[name] = name in headers ? `${headers[name]},${value}` : value;
  }
  headers['x-forwarded-for'] = headers['x-forwarded-for']
    ? `${headers['x-forwarded-for']}, ${sourceIp}`
    : sourceIp;
  headers['x-forwarded-port'] = String(req.socket.localPort ?? '');
  headers['x-forwarded-proto'] = req.socket.encrypted ? 'https' : 'http';
  headers['x-amzn-trace-id'] ??=
    `Root=1-${Math.floor(now / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;

  const domainName = headers.host ?? `${LOCAL_API_ID}.execute-api.us-east-1.amazonaws.com`;
  const queryStringParameters = parseQueryString(rawQueryString);
  const hasPathParameters = options.pathParameters && Object.keys(options.pathParameters).length > 0;

  return {
    version: '2.0',
    routeKey: options.routeKey,
    rawPath,
    rawQueryString,
    ...(cookies.length > 0 && { cookies }),
    headers,
    ...(queryStringParameters && { queryStringParameters }),
    requestContext: {
      accountId: LOCAL_ACCOUNT_ID,
      apiId: LOCAL_API_ID,
      domainName,
      domainPrefix: domainName.split('.')[0] as string,
      http: {
        method: (req.method ?? 'GET').toUpperCase(),
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: options.routeKey,
      stage: '$default',
      time: formatRequestTime(now),
      timeEpoch: now,
    },
    ...(hasPathParameters && { pathParameters: options.pathParameters }),
    ...encodeRequestBody(body, headers['content-type']),
  } as APIGatewayProxyEventV2;
}

// ---------------------------------------------------------------------------
// Result → HTTP response
// ---------------------------------------------------------------------------

export class InvalidLambdaResponseError extends Error {}

/**
 * Payload 2.0 rules: an object with `statusCode` is a structured response;
 * anything else is taken as the JSON body of a 200. `multiValueHeaders` is a
 * payload 1.0 field that HTTP APIs ignore, so it is ignored here too.
 * A malformed structured response is what API Gateway answers 500 for.
 */
export function fromLambdaResult(result: unknown): HttpResponse {
  const structured =
    typeof result === 'object' && result !== null && !Array.isArray(result) && 'statusCode' in result;
  if (!structured) {
    return {
      statusCode: 200,
      headers: { ...json },
      cookies: [],
      body: Buffer.from(JSON.stringify(result ?? null)),
    };
  }
  const r = result as {
    statusCode: unknown;
    headers?: unknown;
    cookies?: unknown;
    body?: unknown;
    isBase64Encoded?: unknown;
  };
  const statusCode = Number(r.statusCode);
  if (!Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
    throw new InvalidLambdaResponseError(`invalid statusCode ${JSON.stringify(r.statusCode)}`);
  }
  const headers: Record<string, string> = {};
  if (r.headers !== undefined && r.headers !== null) {
    if (typeof r.headers !== 'object') throw new InvalidLambdaResponseError('headers must be an object');
    for (const [name, value] of Object.entries(r.headers)) {
      if (value === undefined || value === null) continue;
      if (typeof value === 'object') throw new InvalidLambdaResponseError(`header ${name} must be a scalar`);
      headers[name.toLowerCase()] = String(value);
    }
  }
  let cookies: string[] = [];
  if (r.cookies !== undefined && r.cookies !== null) {
    if (!Array.isArray(r.cookies) || r.cookies.some((c) => typeof c !== 'string')) {
      throw new InvalidLambdaResponseError('cookies must be an array of strings');
    }
    cookies = r.cookies as string[];
  }
  if (r.body !== undefined && r.body !== null && typeof r.body !== 'string') {
    throw new InvalidLambdaResponseError(`body must be a string, got ${typeof r.body}`);
  }
  const text = (r.body as string | undefined) ?? '';
  const body = r.isBase64Encoded === true ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8');
  return { statusCode, headers, cookies, body };
}
