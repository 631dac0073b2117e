/**
 * An integration-test world: a fresh table in the shared DynamoDB Local, seeded
 * with the demo data set, and `call()` which sends an API Gateway v2 event
 * (built by the local runner's adapter) to a real handler, in process.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { AdminContext } from '#scripts/admin/commands.ts';
import { matchRoute, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import { type DemoData, seedDemo } from '#scripts/local/seed.ts';
import type { Table } from '#shared/data/dynamo.ts';
import { operations } from '#shared/operations.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { freshTable } from './dynamodb.ts';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers and assert on them
  body: any;
  raw: string | undefined;
}

export interface CallOptions {
  token?: string;
  headers?: Record<string, string>;
  /** A JSON value to send, or a raw string body. */
  body?: unknown;
}

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** A fresh context per invocation, as Lambda gives. */
const newContext = () =>
  ({ awsRequestId: randomUUID(), functionName: 'test', getRemainingTimeInMillis: () => 10_000 }) as Context;

export function buildEvent(method: string, url: string, options: CallOptions = {}): APIGatewayProxyEventV2 {
  const path = url.split('?')[0] as string;
  const match = matchRoute(method, path, operations);
  if (!('operation' in match)) throw new Error(`no route for ${method} ${path}`);
  const headers: Record<string, string> = { host: 'api.test', 'user-agent': 'vitest', ...options.headers };
  if (options.token !== undefined) headers.authorization ??= `Bearer ${options.token}`;
  let body = Buffer.alloc(0);
  if (options.body !== undefined) {
    body = Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    headers['content-type'] ??= 'application/json';
  }
  const rawHeaders = Object.entries(headers).flat();
  return toApiGatewayEvent(
    { method, url, httpVersion: '1.1', rawHeaders, socket: { remoteAddress: '127.0.0.1' } },
    body,
    { routeKey: match.routeKey, pathParameters: match.pathParameters },
  );
}

/** The real handlers over `deps`: an API Gateway event in, a `Reply` out (each call its own context). */
export function eventInvoker(deps: Dependencies) {
  const handlers = new Map<string, Handler>();
  async function handlerFor(name: string): Promise<Handler> {
    let handler = handlers.get(name);
    if (!handler) {
      const module = (await import(`../../functions/${name}/handler.ts`)) as {
        createHandler(d: Dependencies): Handler;
      };
      handler = module.createHandler(deps);
      handlers.set(name, handler);
    }
    return handler;
  }
  return async (event: APIGatewayProxyEventV2): Promise<Reply> => {
    const match = matchRoute(event.requestContext.http.method, event.rawPath, operations);
    if (!('operation' in match)) throw new Error(`no route for ${event.routeKey}`);
    const result = await (await handlerFor(match.operation.name))(event, newContext());
    const headers = Object.fromEntries(
      Object.entries(result.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
    );
    let body: unknown;
    try {
      body = result.body === undefined ? undefined : JSON.parse(result.body);
    } catch {
      body = result.body;
    }
    return { status: result.statusCode ?? 200, headers, body, raw: result.body };
  };
}

/** The real handlers over `deps`, called with a method, a URL and options. */
export function inProcessApi(deps: Dependencies) {
  const invoke = eventInvoker(deps);
  return (method: string, url: string, options: CallOptions = {}): Promise<Reply> =>
    invoke(buildEvent(method, url, options));
}

export interface World {
  table: Table;
  deps: Dependencies;
  admin: AdminContext;
  demo: DemoData;
  /** DynamoDB requests sent since the last `resetCount()` (one per round trip; SDK retries not included). */
  roundTrips(): number;
  resetCount(): void;
  call(method: string, url: string, options?: CallOptions): Promise<Reply>;
  drop(): Promise<void>;
}

export async function createWorld(prefix: string): Promise<World> {
  const fresh = await freshTable(prefix);
  const table: Table = { doc: fresh.client, name: fresh.tableName };
  let sent = 0;
  fresh.client.middlewareStack.add(
    (next) => async (args) => {
      sent++;
      return next(args);
    },
    { step: 'initialize', name: 'countRoundTrips' },
  );
  const deps: Dependencies = { table, now: () => new Date() };
  const admin: AdminContext = { table, now: () => new Date(), secretKey: randomBytes(32) };
  const demo = await seedDemo(admin, 'http://in-process');
  const call = inProcessApi(deps);

  return {
    table,
    deps,
    admin,
    demo,
    roundTrips: () => sent,
    resetCount: () => {
      sent = 0;
    },
    call,
    drop: fresh.drop,
  };
}
