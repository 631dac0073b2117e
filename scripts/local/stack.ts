/**
 * The whole local stack as a function: DynamoDB Local, the table (from the
 * stack's definition), the demo data and the HTTP API over the real handlers.
 * `npm start` runs it; the end-to-end tests start it exactly the same way.
 *
 * What AWS enforces and emulators do not is enforced here too: every handler reaches DynamoDB
 * through the IAM proxy under its own function's policy, read from the synthesised stack, and
 * requests are routed over the routes the stack declares, with its CORS policy.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type AdminContext, createCustomerSession } from '#scripts/admin/commands.ts';
import { getCustomer } from '#shared/data/catalog.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { getWebhookEndpoint } from '#shared/data/webhooks.ts';
import { type IdTokenKeys, localIdTokenKeys } from '#shared/domain/id-token.ts';
import { newKeySetDocument, noKeyring, staticKeyring } from '#shared/domain/keyring.ts';
import { DEFAULT_QUOTAS, type QuotaSettings } from '#shared/domain/limits.ts';
import { TABLE_NAME_ENV, WEBHOOK_KEY_SET_ID_ENV } from '#shared/env.ts';
import { type CorsPolicy, corsPolicy, DEFAULT_ALLOW_ORIGINS, parseAllowOrigins } from '#shared/http/cors.ts';
import { QuotaKeeper } from '#shared/http/quota.ts';
import { scheduledFunctions, usesIdTokenKeys, usesWebhookKeySet } from '#shared/operations.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import { DELIVERY_QUEUE_URL_ENV } from '#shared/queue/production.ts';
import type { Dependencies, WebhookSettings } from '#shared/runtime.ts';
import { signingSecrets } from '#shared/services/webhook-endpoints.ts';
import { MAX_ATTEMPTS } from '#shared/webhooks/retry.ts';
import { ensureTable } from './create-table.ts';
import { type DemoReceiver, startDemoReceiver } from './demo-receiver.ts';
import { type DynamoDbLocalJit, startDynamoDbLocal } from './dynamodb-local.ts';
import { judgeInProcess } from './iam/in-process.ts';
import type { StackPolicies } from './iam/policy.ts';
import { type IamProxy, startIamProxy } from './iam/proxy.ts';
import { synthesizePolicies } from './iam/synth.ts';
import { type LocalPipeline, startLocalPipeline } from './pipeline.ts';
import { type DemoData, seedDemo } from './seed.ts';
import { type ApiServerOptions, type LambdaHandler, startApiServer } from './server.ts';

export const LOCAL_TABLE_NAME = 'commerce-api-local';
export const LOCAL_REGION = 'us-east-1';

export interface LocalStackOptions {
  port: number;
  /**
   * The request quotas the functions enforce (shared/http/quota.ts): default the deployed ones
   * (`DEFAULT_QUOTAS`); `false` turns them off (suites that send thousands of requests with one token).
   */
  quotas?: QuotaSettings | false;
  host?: string;
  /** Keep the database here across restarts; in memory when absent. */
  dataDir?: string;
  quiet?: boolean;
  /** The functions' IAM policies; default: synthesised from the stack now. */
  policies?: StackPolicies;
  /** Allowed CORS origins; default `CORS_ALLOW_ORIGINS` from the environment, else `*` as deployed. */
  corsAllowOrigins?: readonly string[];
  /**
   * A DynamoDB Local already running (tests share one per run): the stack makes its own table there
   * and leaves the database running when it stops. Default: start one.
   */
  dynamodbEndpoint?: string;
  /**
   * The DynamoDB Local this stack starts: `steady-state` (`npm start`, the bench) for a long session,
   * `fast-start` (default; the tests' short-lived stacks). Ignored with `dynamodbEndpoint`.
   */
  dynamodbJit?: DynamoDbLocalJit;
  /** Default `LOCAL_TABLE_NAME`; tests sharing one DynamoDB Local give each stack its own. */
  tableName?: string;
  /**
   * Let webhook endpoints point at loopback (`http://127.0.0.1:…`, `localhost`), so a developer can
   * receive deliveries on their machine. `npm start` turns it on; off by default, as deployed.
   */
  allowLoopbackWebhooks?: boolean;
  /**
   * How often the scheduled functions (the subscription clock) run, as the stack's schedule runs them
   * on AWS; default `SCHEDULE_INTERVAL_MS` from the environment, else 60 s; 0: never.
   */
  scheduleIntervalMs?: number;
  /** Run the webhook pipeline (stream poller, relay, deliverer); default true. */
  webhooks?: boolean;
  /** How the functions' clients meet IAM; default `LOCAL_IAM` from the environment, else in-process. */
  iamPath?: IamPath;
  /**
   * The demo's webhook endpoints point at a receiver this stack runs on loopback, which verifies each
   * delivery (`demo-receiver.ts`); needs `allowLoopbackWebhooks`, and is on with it by default (`npm
   * start`). False: at names that never resolve, as before (every delivery to them fails and retries
   * in the background).
   */
  demoReceiver?: boolean;
  /** The API server's line per request (`npm start`'s terminal); default: the plain line unless quiet. */
  logRequest?: ApiServerOptions['logRequest'];
}

export interface LocalStack {
  /**
   * `dynamodb_endpoint` is DynamoDB Local itself (operator access); each function reaches it through
   * its own endpoint of the IAM proxy (`function_endpoints`, by function name).
   */
  demo: DemoData & {
    dynamodb_endpoint: string;
    function_endpoints: Record<string, string>;
    table_name: string;
  };
  cors: CorsPolicy;
  reusedData: boolean;
  /** The webhook key set (`shared/domain/keyring.ts`), as the admin CLI's `--local` target reads it. */
  keySet: string;
  /** The demo endpoints' receiver, when it runs. */
  demoReceiver?: DemoReceiver;
  stop(): Promise<void>;
}

/** Region and placeholder credentials: the SDK signs every request, DynamoDB Local ignores the signature. */
function localAwsEnvironment(endpoint: string, tableName: string): void {
  process.env.AWS_REGION = LOCAL_REGION;
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
  process.env[TABLE_NAME_ENV] = tableName;
  // Handler modules wire their AWS dependencies when they load, as on Lambda; each is then built
  // over the local ones (the key set is passed in, never read from Secrets Manager here).
  process.env[WEBHOOK_KEY_SET_ID_ENV] ??= 'local';
  process.env[DELIVERY_QUEUE_URL_ENV] ??= 'http://in-process.local/deliveries';
}

/** The webhook key set: kept beside persistent data, else made per run. */
function keySetDocument(dataDir: string | undefined): string {
  if (!dataDir) return newKeySetDocument();
  const file = join(dataDir, 'webhook-keys.json');
  if (!existsSync(file)) {
    if (existsSync(join(dataDir, 'webhook-secret.key'))) {
      throw new Error(
        `${dataDir} was written before webhook key sets had versions: its endpoints' secrets cannot be ` +
          'opened any more. Start with another --data-dir (or delete this one).',
      );
    }
    writeFileSync(file, newKeySetDocument(), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8');
}

/**
 * The webhook settings of one function: the key set only for the functions the stack grants it to
 * (`webhookKeySet` in the route table), as on AWS.
 */
export function functionWebhookSettings(name: string, settings: WebhookSettings): WebhookSettings {
  return usesWebhookKeySet(name) ? settings : { ...settings, keyring: noKeyring };
}

/**
 * The stack's issuer (its own address, as each deployed stage is configured with its URL) and ID
 * Token keys (made per run). Every function gets the issuer; the keys only those the stack grants
 * them to (`usesIdTokenKeys`), as on AWS.
 */
export interface OAuthSettings {
  issuer: string;
  idTokenKeys: IdTokenKeys;
}

/** On a restart over kept data, sessions (one hour) are renewed so the printed tokens work. */
async function renewSessions(ctx: AdminContext, demo: DemoData): Promise<DemoData> {
  const renew = async (customerId: string) => {
    const customer = await getCustomer(ctx.table, customerId);
    if (!customer) throw new Error(`demo customer ${customerId} is missing from the kept data`);
    return (await createCustomerSession(ctx, { customer })).token;
  };
  return {
    ...demo,
    customer_session_token: await renew(demo.customer_id),
    second_customer_session_token: await renew(demo.second_customer_id),
    large_customer_session_token: await renew(demo.large_customer_id),
  };
}

/**
 * How the functions' clients meet IAM: `in-process` (default) judges each request in the client's
 * request handler, then sends it straight to DynamoDB Local; `proxy` (`LOCAL_IAM=proxy`, the path before
 * the bench's section 5 measured it) sends it to the function's own port of the IAM proxy, which judges
 * the same bytes with the same judge and forwards them.
 */
export type IamPath = 'in-process' | 'proxy';

export function iamPathFromEnv(value = process.env.LOCAL_IAM): IamPath {
  if (value === undefined || value === '' || value === 'in-process') return 'in-process';
  if (value === 'proxy') return 'proxy';
  throw new Error(`LOCAL_IAM must be in-process or proxy, got ${value}`);
}

/** Each function's own client, judged by its own policy on every call (`IamPath`). */
function functionDependencies(
  iam: IamProxy,
  iamPath: IamPath,
  dynamodbEndpoint: string,
  tableName: string,
  webhooks: WebhookSettings,
  oauth: OAuthSettings,
  quotas: QuotaSettings | undefined,
): (name: string) => Dependencies {
  const deps = new Map<string, Dependencies>();
  return (name) => {
    let found = deps.get(name);
    if (!found) {
      const endpoint = iamPath === 'proxy' ? iam.endpointFor(name) : dynamodbEndpoint;
      const doc = createDocumentClient({ endpoint, region: LOCAL_REGION });
      if (iamPath === 'in-process') judgeInProcess(doc, iam.judge, name);
      found = {
        table: { doc, name: tableName },
        now: () => new Date(),
        webhooks: functionWebhookSettings(name, webhooks),
        // Read when used: with port 0 the address is known only once the server listens.
        get issuer() {
          return oauth.issuer;
        },
        ...(usesIdTokenKeys(name) ? { idTokenKeys: oauth.idTokenKeys } : {}),
      };
      // Each function its own keeper, as each deployed instance has: same quotas, same counters.
      if (quotas) found.quotas = new QuotaKeeper(found.table, quotas);
      deps.set(name, found);
    }
    return found;
  };
}

/**
 * The webhook pipeline over the local table, with the very relay and deliverer handlers the stack
 * deploys, each under its own IAM policy and with its own webhook settings (the deliverer gets the key
 * set, as on AWS, and the stack's address policy: `npm start` lets deliveries reach loopback receivers
 * started with `npm run webhooks:listen`, which the deployed guard refuses); the delivery queue is
 * the in-process one.
 */
async function startWebhookPipeline(
  dynamodbEndpoint: string,
  tableName: string,
  depsFor: (name: string) => Dependencies,
  queue: LocalQueue,
  quiet: boolean,
): Promise<LocalPipeline> {
  const relayModule = await import('#functions/webhook-relay/handler.ts');
  const delivererModule = await import('#functions/webhook-deliverer/handler.ts');
  const aggregatorModule = await import('#functions/meter-aggregator/handler.ts');
  return startLocalPipeline({
    dynamodbEndpoint,
    tableName,
    region: LOCAL_REGION,
    queue,
    relay: relayModule.createHandler({ ...depsFor('webhook-relay'), queue }),
    deliver: delivererModule.createHandler({ ...depsFor('webhook-deliverer'), queue }),
    aggregate: aggregatorModule.createHandler(depsFor('meter-aggregator')),
    onError: (error) => {
      if (!quiet) console.error('[webhooks]', error);
    },
  });
}

/** Local deliveries that crashed come back after this long (the deployed queue: infra/webhooks.ts). */
export const LOCAL_VISIBILITY_SECONDS = 30;

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const cors = corsPolicy(
    options.corsAllowOrigins ?? parseAllowOrigins(process.env.CORS_ALLOW_ORIGINS ?? DEFAULT_ALLOW_ORIGINS),
  );
  if (options.dynamodbEndpoint && dataDir) throw new Error('dataDir needs a DynamoDB Local of its own');
  const db = options.dynamodbEndpoint
    ? { endpoint: options.dynamodbEndpoint, stop: async () => {} }
    : await startDynamoDbLocal({
        ...(dataDir ? { dataDir } : {}),
        ...(options.dynamodbJit ? { jit: options.dynamodbJit } : {}),
      });
  const tableName = options.tableName ?? LOCAL_TABLE_NAME;
  const stops: (() => Promise<void>)[] = [() => db.stop()];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    const policies = options.policies ?? synthesizePolicies();
    localAwsEnvironment(db.endpoint, tableName);
    const admin = new DynamoDBClient({ region: LOCAL_REGION, endpoint: db.endpoint });
    const { created } = await ensureTable(admin, tableName);
    admin.destroy();

    const host = options.host ?? '127.0.0.1';
    const baseUrl = `http://${host}:${options.port}`;
    const keySet = keySetDocument(dataDir);
    const ctx: AdminContext = {
      table: { doc: createDocumentClient({ endpoint: db.endpoint }), name: tableName },
      now: () => new Date(),
      webhooks: {
        keyring: staticKeyring(keySet),
        addresses: { allowLoopback: options.allowLoopbackWebhooks ?? false },
      },
    };
    const keptDemo = dataDir ? join(dataDir, 'demo.json') : undefined;
    const reusedData = !created && keptDemo !== undefined && existsSync(keptDemo);
    const kept: DemoData | undefined = reusedData ? JSON.parse(readFileSync(keptDemo, 'utf8')) : undefined;
    let receiver: DemoReceiver | undefined;
    let demoEndpoints: Record<string, string> = {};
    const withReceiver = options.demoReceiver ?? options.allowLoopbackWebhooks ?? false;
    if (withReceiver && !options.allowLoopbackWebhooks)
      throw new Error('demoReceiver needs allowLoopbackWebhooks: the receiver listens on loopback');
    if (withReceiver) {
      const operator = {
        ...ctx,
        table: { doc: createDocumentClient({ endpoint: db.endpoint }), name: tableName },
      };
      stops.push(async () => operator.table.doc.destroy());
      receiver = await startReceiverOn(host, kept?.webhook_receiver_url, async (path) => {
        const id = demoEndpoints[path];
        const endpoint = id ? await getWebhookEndpoint(operator.table, id) : undefined;
        return endpoint ? signingSecrets(operator, endpoint, new Date()) : [];
      });
      stops.push(() => (receiver as DemoReceiver).stop());
    }
    const receiverUrl = receiver?.url;
    const seeded = kept
      ? await renewSessions(ctx, { ...kept, base_url: baseUrl })
      : await seedDemo(
          ctx,
          baseUrl,
          receiverUrl ? { webhookUrl: (endpoint) => `${receiverUrl}/demo/${endpoint}` } : {},
        );
    const demoData: DemoData = receiverUrl ? { ...seeded, webhook_receiver_url: receiverUrl } : seeded;
    demoEndpoints = {
      ...Object.fromEntries(demoData.webhook_endpoint_ids.map((id, i) => [`/demo/${i + 1}`, id])),
      '/demo/other': demoData.other_organization.webhook_endpoint_id,
    };
    if (keptDemo) writeFileSync(keptDemo, JSON.stringify(demoData, null, 2));
    ctx.table.doc.destroy();

    const iam = await startIamProxy({
      upstream: db.endpoint,
      tableName,
      policies,
      region: LOCAL_REGION,
    });
    stops.push(() => iam.stop());
    // The delivery queue, in process with SQS's semantics (redrive after MAX_ATTEMPTS + 5 receives, as
    // deployed): the relay sends to it (no API function does); the pipeline, when it runs, pumps it.
    const queue = new LocalQueue({
      visibilityTimeoutSeconds: LOCAL_VISIBILITY_SECONDS,
      maxReceiveCount: MAX_ATTEMPTS + 5,
      deadLetter: new LocalQueue({ visibilityTimeoutSeconds: 30 }),
    });
    const oauth: OAuthSettings = { issuer: baseUrl, idTokenKeys: localIdTokenKeys() };
    const depsFor = functionDependencies(
      iam,
      options.iamPath ?? iamPathFromEnv(),
      db.endpoint,
      tableName,
      ctx.webhooks,
      oauth,
      options.quotas === false ? undefined : (options.quotas ?? DEFAULT_QUOTAS),
    );
    const server = await startApiServer({
      port: options.port,
      host,
      quiet: options.quiet ?? false,
      ...(options.logRequest ? { logRequest: options.logRequest } : {}),
      cors,
      // Imported only now: each handler module wires its production dependencies when it loads, as
      // in Lambda; each is then built over its own function's client (its IAM identity).
      loadHandler: async (fn) => {
        const module = (await import(resolve(import.meta.dirname, '../..', fn.entry))) as {
          createHandler?: (deps: Dependencies) => LambdaHandler;
          handler: LambdaHandler;
        };
        return module.createHandler ? module.createHandler(depsFor(fn.name)) : module.handler;
      },
    });
    stops.push(() => server.close());
    oauth.issuer = server.url;
    stops.push(
      await startSchedules(
        depsFor,
        options.scheduleIntervalMs ?? Number(process.env.SCHEDULE_INTERVAL_MS ?? 60_000),
        options.quiet ?? false,
      ),
    );
    if (options.webhooks ?? true) {
      const pipeline = await startWebhookPipeline(
        db.endpoint,
        tableName,
        depsFor,
        queue,
        options.quiet ?? false,
      );
      stops.push(() => pipeline.stop());
    }
    return {
      demo: {
        ...demoData,
        base_url: server.url,
        dynamodb_endpoint: db.endpoint,
        function_endpoints: iam.endpoints,
        table_name: tableName,
      },
      cors,
      reusedData,
      keySet,
      ...(receiver ? { demoReceiver: receiver } : {}),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/**
 * The demo endpoints' receiver; over kept data on the port their URLs name, else (or when that port is
 * taken now) on any free one: then the kept endpoints' deliveries fail, and the banner says so.
 */
async function startReceiverOn(
  host: string,
  keptUrl: string | undefined,
  secretsFor: (path: string) => Promise<string[]>,
): Promise<DemoReceiver> {
  const keptPort = keptUrl ? Number(new URL(keptUrl).port) : 0;
  try {
    return await startDemoReceiver({ host, port: keptPort, secretsFor });
  } catch (error) {
    if (keptPort === 0) throw error;
    console.error(
      `The demo webhook receiver cannot listen on ${keptUrl} again (${String(error)}): the kept demo endpoints' deliveries will fail.`,
    );
    return startDemoReceiver({ host, port: 0, secretsFor });
  }
}

type ScheduledHandler = (event: Record<string, never>) => Promise<unknown>;

/**
 * The scheduled functions on a timer, each the real handler over its own function's client (its IAM
 * policy), as the stack's EventBridge rule invokes it; a run still going when the next is due is not
 * doubled. Answers the function that stops them.
 */
async function startSchedules(
  depsFor: (name: string) => Dependencies,
  intervalMs: number,
  quiet: boolean,
): Promise<() => Promise<void>> {
  if (!(intervalMs > 0)) return async () => {};
  const schedules = await Promise.all(
    scheduledFunctions.map(async (fn) => {
      const module = (await import(resolve(import.meta.dirname, '../..', fn.entry))) as {
        createHandler: (deps: Dependencies) => ScheduledHandler;
      };
      const handler = module.createHandler(depsFor(fn.name));
      const schedule: { running?: Promise<void>; timer?: NodeJS.Timeout } = {};
      schedule.timer = setInterval(() => {
        if (schedule.running) return;
        schedule.running = handler({})
          .then(
            () => undefined,
            (error: unknown) => {
              if (!quiet) console.error(`${fn.name} failed: ${String(error)}`);
            },
          )
          .finally(() => {
            schedule.running = undefined;
          });
      }, intervalMs);
      return schedule;
    }),
  );
  return async () => {
    for (const schedule of schedules) clearInterval(schedule.timer);
    await Promise.allSettled(schedules.map((schedule) => schedule.running));
  };
}
