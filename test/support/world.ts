/**
 * An integration-test world: a fresh table in the shared DynamoDB Local, seeded
 * with the demo data set, and `call()` which sends an API Gateway v2 event
 * (built by the local runner's adapter) to a real handler, in process.
 *
 * Every handler reaches DynamoDB through the IAM proxy with its own function's credentials, so each
 * call it makes is judged by the policy the synthesised stack gives that function; seeding and
 * assertions (`world.table`) go to DynamoDB Local directly, as an operator would.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { inject } from 'vitest';
import type { AdminContext } from '#scripts/admin/commands.ts';
import { routeRequest, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import type { StackPolicies } from '#scripts/local/iam/policy.ts';
import { type IamProxy, type IamProxyOptions, startIamProxy } from '#scripts/local/iam/proxy.ts';
import type { DemoData } from '#scripts/local/seed.ts';
import { functionWebhookSettings } from '#scripts/local/stack.ts';
import { createDocumentClient, type Table } from '#shared/data/dynamo.ts';
import { localIdTokenKeys } from '#shared/domain/id-token.ts';
import type { QuotaSettings } from '#shared/domain/limits.ts';
import { QuotaKeeper } from '#shared/http/quota.ts';
import { usesIdTokenKeys } from '#shared/operations.ts';
import type { Dependencies, WebhookSettings } from '#shared/runtime.ts';
import {
  dynamodbEndpoint,
  freshTable,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  seedSnapshot,
  stackPolicies,
  testWebhooks,
} from './dynamodb.ts';
import { restoreSnapshot } from './snapshot.ts';

export { UNREACHABLE_QUOTAS } from './quotas.ts';

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
  /** A JSON value to send, a raw string body, or raw bytes (a Buffer, sent as they are). */
  body?: unknown;
  /**
   * Deliver the body base64-encoded (`isBase64Encoded: true`), as API Gateway may for any body;
   * by default the adapter decides as API Gateway does (text for valid UTF-8 JSON).
   */
  base64?: boolean;
}

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** The dependencies a function is built with: its own client, under its own IAM identity. */
export type DepsFor = (functionName: string) => Dependencies;

/** A fresh context per invocation, as Lambda gives. */
const newContext = () =>
  ({ awsRequestId: randomUUID(), functionName: 'test', getRemainingTimeInMillis: () => 10_000 }) as Context;

export function buildEvent(method: string, url: string, options: CallOptions = {}): APIGatewayProxyEventV2 {
  const path = url.split('?')[0] as string;
  const route = routeRequest(method, path);
  if (!route) throw new Error(`no route for ${method} ${path}`);
  const headers: Record<string, string> = { host: 'api.test', 'user-agent': 'vitest', ...options.headers };
  if (options.token !== undefined) headers.authorization ??= `Bearer ${options.token}`;
  let body: Buffer = Buffer.alloc(0);
  if (options.body !== undefined) {
    body = Buffer.isBuffer(options.body)
      ? options.body
      : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    headers['content-type'] ??= 'application/json';
  }
  const rawHeaders = Object.entries(headers).flat();
  const event = toApiGatewayEvent(
    { method, url, httpVersion: '1.1', rawHeaders, socket: { remoteAddress: '127.0.0.1' } },
    body,
    { routeKey: route.routeKey, pathParameters: route.pathParameters },
  );
  if (options.base64 && body.length > 0) {
    event.body = body.toString('base64');
    event.isBase64Encoded = true;
  }
  return event;
}

/** The real handlers, each built over its function's dependencies: an API Gateway event in, a `Reply` out. */
export function eventInvoker(depsFor: DepsFor) {
  const handlers = new Map<string, Handler>();
  async function handlerFor(name: string): Promise<Handler> {
    let handler = handlers.get(name);
    if (!handler) {
      const module = (await import(`../../functions/${name}/handler.ts`)) as {
        createHandler?(d: Dependencies): Handler;
        handler: Handler;
      };
      handler = module.createHandler ? module.createHandler(depsFor(name)) : module.handler;
      handlers.set(name, handler);
    }
    return handler;
  }
  return async (event: APIGatewayProxyEventV2): Promise<Reply> => {
    const route = routeRequest(event.requestContext.http.method, event.rawPath);
    if (!route) throw new Error(`no route for ${event.routeKey}`);
    const result = await (await handlerFor(route.target.name))(event, newContext());
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

/** The real handlers, called with a method, a URL and options. */
export function inProcessApi(depsFor: DepsFor) {
  const invoke = eventInvoker(depsFor);
  return (method: string, url: string, options: CallOptions = {}): Promise<Reply> =>
    invoke(buildEvent(method, url, options));
}

export interface FunctionClientsOptions {
  /** Where a function's client sends its requests: its own endpoint of the IAM proxy. */
  endpointFor: (functionName: string) => string;
  tableName: string;
  /** Applied to each function's client when it is created (fault injection, counters). */
  configure?: (doc: DynamoDBDocumentClient, functionName: string) => void;
  /** Client settings over the production ones (`createDocumentClient`). */
  clientConfig?: Parameters<typeof createDocumentClient>[0];
  now?: () => Date;
  /** The key set and address policy; each function gets the key set only if the stack grants it. */
  webhooks: WebhookSettings;
  /**
   * The request quotas each function enforces with a keeper of its own, as each deployed instance
   * does (`productionDependencies`); absent: none (the worlds of tests that count round trips).
   */
  quotas?: QuotaSettings;
}

/**
 * The issuer every in-process world is configured with (the stack passes each stage its own). Requests
 * name `Host: api.test` by default, and a test that sends another host sees this issuer all the same.
 */
export const WORLD_ISSUER = 'https://api.test';
/**
 * The worlds' ID Token keys, given only to the functions the stack grants them to: one per test run,
 * made by the DynamoDB projects' global setup (test/support/dynamodb.ts), or one per process where no
 * setup provides it (a script importing this module). An RSA-2048 key pair costs about 0.2 s of a core
 * to generate, once per test file when each file made its own. The private key is exported for the
 * secrets-hygiene suite, which looks for it everywhere.
 */
export const worldIdTokenPrivateKey: KeyObject = runIdTokenKey();
function runIdTokenKey(): KeyObject {
  let pem: string | undefined;
  try {
    pem = inject('worldIdTokenPrivateKey');
  } catch {
    // Not in a vitest worker.
  }
  return pem ? createPrivateKey(pem) : generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
}
export const worldIdTokenKeys = localIdTokenKeys(worldIdTokenPrivateKey);

export interface FunctionClients {
  depsFor: DepsFor;
  destroy(): void;
}

/**
 * One production client per function (`createDocumentClient`, as each Lambda builds its own), on
 * the function's own endpoint of the IAM proxy, so that the proxy applies that function's policy.
 */
export function functionClients(options: FunctionClientsOptions): FunctionClients {
  const deps = new Map<string, Dependencies>();
  return {
    depsFor: (name) => {
      let found = deps.get(name);
      if (!found) {
        const doc = createDocumentClient({
          endpoint: options.endpointFor(name),
          region: LOCAL_REGION,
          credentials: LOCAL_CREDENTIALS,
          ...options.clientConfig,
        });
        options.configure?.(doc, name);
        found = {
          table: { doc, name: options.tableName },
          now: options.now ?? (() => new Date()),
          webhooks: functionWebhookSettings(name, options.webhooks),
          issuer: WORLD_ISSUER,
          ...(usesIdTokenKeys(name) ? { idTokenKeys: worldIdTokenKeys } : {}),
        };
        if (options.quotas) found.quotas = new QuotaKeeper(found.table, options.quotas);
        deps.set(name, found);
      }
      return found;
    },
    destroy: () => {
      for (const { table } of deps.values()) table.doc.destroy();
    },
  };
}

/**
 * The SDK's own timeouts, not the functions' 1 s / 2 s: a shared, busy CI machine can hold one
 * DynamoDB Local answer longer than that, which is a slow test, not a failure. The production
 * timeouts are exercised by the fault-injection suite.
 */
const TEST_CLIENT_CONFIG = { requestHandler: { connectionTimeout: 10_000, requestTimeout: 20_000 } };

export interface World {
  /** Operator access: DynamoDB Local directly, no IAM (seeding, assertions). */
  table: Table;
  /** A function's dependencies: its own client through the IAM proxy. */
  depsFor: DepsFor;
  admin: AdminContext;
  demo: DemoData;
  iam: IamProxy;
  policies: StackPolicies;
  /** DynamoDB requests the functions sent since the last `resetCount()` (one per round trip; SDK retries not included). */
  roundTrips(): number;
  /**
   * One function's calls since `resetCount()`: what a check of one request's round trips reads when
   * the world's pipeline (relay, deliverer) may be calling at the same time.
   */
  roundTripsOf(functionName: string): number;
  resetCount(): void;
  /** The quotas its functions enforce (`createWorld`'s option), kept by `underPolicies`. */
  quotas?: QuotaSettings;
  call(method: string, url: string, options?: CallOptions): Promise<Reply>;
  drop(): Promise<void>;
}

export interface WorldOptions {
  /** The request quotas the functions enforce (`FunctionClientsOptions.quotas`); default none. */
  quotas?: QuotaSettings;
}

export async function createWorld(
  prefix: string,
  policies: StackPolicies = stackPolicies(),
  options: WorldOptions = {},
): Promise<World> {
  const fresh = await freshTable(prefix);
  // The run's one demo seed, copied into this world's table below, sealed its secrets with this key set.
  const snapshot = seedSnapshot();
  const webhooks = testWebhooks(snapshot.keySet);
  const table: Table = { doc: fresh.client, name: fresh.tableName };
  const iam = await startIamProxy({
    upstream: dynamodbEndpoint(),
    tableName: fresh.tableName,
    policies,
    region: LOCAL_REGION,
  });
  // Calls per function since the last reset; the world's count is their sum.
  const sentBy = new Map<string, number>();
  const clients = functionClients({
    endpointFor: iam.endpointFor,
    tableName: fresh.tableName,
    clientConfig: TEST_CLIENT_CONFIG,
    webhooks,
    ...(options.quotas ? { quotas: options.quotas } : {}),
    configure: (doc, functionName) =>
      doc.middlewareStack.add(
        (next) => async (args) => {
          sentBy.set(functionName, (sentBy.get(functionName) ?? 0) + 1);
          return next(args);
        },
        { step: 'initialize', name: 'countRoundTrips' },
      ),
  });
  await restoreSnapshot(fresh.base, fresh.tableName, snapshot);
  const admin: AdminContext = { table, now: () => new Date(), webhooks };
  const demo = snapshot.demo;

  return {
    table,
    depsFor: clients.depsFor,
    admin,
    demo,
    iam,
    policies,
    ...(options.quotas ? { quotas: options.quotas } : {}),
    roundTrips: () => [...sentBy.values()].reduce((sum, n) => sum + n, 0),
    roundTripsOf: (functionName) => sentBy.get(functionName) ?? 0,
    resetCount: () => sentBy.clear(),
    call: inProcessApi(clients.depsFor),
    drop: async () => {
      clients.destroy();
      await iam.stop();
      await fresh.drop();
    },
  };
}

/**
 * The same table and data, with the functions under other policies: a fresh IAM proxy and fresh
 * clients over the world's table, without another seed. `drop()` stops only what this added.
 */
export async function underPolicies(
  world: World,
  policies: StackPolicies,
  options: Pick<IamProxyOptions, 'onVerdict'> = {},
): Promise<World> {
  const iam = await startIamProxy({
    upstream: dynamodbEndpoint(),
    tableName: world.table.name,
    policies,
    region: LOCAL_REGION,
    ...options,
  });
  const clients = functionClients({
    endpointFor: iam.endpointFor,
    tableName: world.table.name,
    clientConfig: TEST_CLIENT_CONFIG,
    webhooks: world.admin.webhooks,
    ...(world.quotas ? { quotas: world.quotas } : {}),
  });
  return {
    ...world,
    depsFor: clients.depsFor,
    iam,
    policies,
    call: inProcessApi(clients.depsFor),
    drop: async () => {
      clients.destroy();
      await iam.stop();
    },
  };
}
