/**
 * The contract `sam local invoke -t cdk.out/CommerceApi-prod.template.json <LogicalId>`
 * and `sam local start-api` rely on, checked without SAM or Docker: the prod stack is
 * synthesised with real bundling into a temporary cloud assembly, then every function
 * is found, loaded and invoked the way SAM would — code from its `aws:asset:path`,
 * module and export from `Handler`, environment from the template overridden by
 * `events/env.json` (only for variables the template declares, as SAM does), event
 * from `events/<operation>.json` rendered by `npm run sam:events`'s renderer — each in
 * a fresh Node process against DynamoDB Local seeded by the demo seed, through the IAM proxy:
 * each bundle reaches DynamoDB on its own endpoint, under the policy this very template gives it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { App, type CfnElement } from 'aws-cdk-lib';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AdminContext } from '#scripts/admin/commands.ts';
import { type Moto, startMoto } from '#scripts/deploy/moto.ts';
import { LAMBDA_NODE_MAJOR, lambdaNode } from '#scripts/lambda-node.ts';
import { fromLambdaResult, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import { ensureTable } from '#scripts/local/create-table.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '#scripts/local/dynamodb-local.ts';
import { type IamProxy, startIamProxy } from '#scripts/local/iam/proxy.ts';
import { stackPolicies } from '#scripts/local/iam/synth.ts';
import { sqsEvent } from '#scripts/local/pipeline.ts';
import { type DemoData, seedDemo } from '#scripts/local/seed.ts';
import { type ApiServer, type LambdaHandler, startApiServer } from '#scripts/local/server.ts';
import { LOCAL_REGION, LOCAL_TABLE_NAME } from '#scripts/local/stack.ts';
import { loadOpenApi } from '#scripts/openapi.ts';
import {
  createDeliveryQueue,
  ENV_VARS_FILE,
  LOCAL_DELIVERY_QUEUE_NAME,
  renderEvents,
  renderTemplate,
  storeKeySet,
  templateVariables,
  writeRenderedEvents,
} from '#scripts/sam-events.ts';
import { getWebhookEvent } from '#shared/data/deliveries.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import type { OutboxEventRecord } from '#shared/data/records.ts';
import { keys, outboxKeys, REDELIVERY_SORT_KEY_PREFIX } from '#shared/data/table.ts';
import { organizationWebhookEndpoints } from '#shared/data/webhooks.ts';
import { newId } from '#shared/domain/ids.ts';
import { newKeySetDocument } from '#shared/domain/keyring.ts';
import { swaggerUiAssets } from '#shared/http/api-reference.ts';
import { DEFAULT_ROUTE_KEY } from '#shared/http/routes.ts';
import {
  apiReference,
  type OperationName,
  operations,
  pipelineFunctions,
  routeNotFound,
  scheduledFunctions,
} from '#shared/operations.ts';
import { sqsQueue } from '#shared/queue/sqs.ts';
import { envelope, webhookEventId } from '#shared/webhooks/events.ts';
import {
  LOCAL_ENDPOINT_ENV,
  LOCAL_SECRETS_ENDPOINT_ENV,
  LOCAL_SQS_ENDPOINT_ENV,
} from '../../infra/function.ts';
import { type CommerceApiStack, createStageStack } from '../../infra/stack.ts';
import { expectDocumented, fetchJson, type HttpReply } from '../support/contract.ts';
import { testWebhooks } from '../support/dynamodb.ts';

const run = promisify(execFile);
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));

// biome-ignore lint/suspicious/noExplicitAny: template JSON is untyped; the assertions check its shape.
type Json = any;
type Demo = DemoData & {
  dynamodb_endpoint: string;
  function_endpoints: Record<string, string>;
  table_name: string;
  secrets_manager_endpoint: string;
  webhook_key_set_arn: string;
  sqs_endpoint: string;
  delivery_queue_url: string;
};

let workDir: string;
let outdir: string;
let stack: CommerceApiStack;
let template: { Resources: Record<string, { Type: string; Properties: Json; Metadata?: Json }> };
let db: DynamoDbLocal | undefined;
/** moto's Secrets Manager API, holding the webhook key set as the stack's secret holds it on AWS. */
let moto: Moto | undefined;
let iam: IamProxy | undefined;
let demo: Demo;
let rendered: Map<string, Json>;
/** The webhook key set the seed sealed secrets with; the bundles read it from Secrets Manager (moto). */
let keySet: string;

beforeAll(async () => {
  // The JVM starts while esbuild bundles (synth blocks this thread, not the other process).
  // Kept as soon as it is up, so afterAll stops it even if synth fails.
  const starting = startDynamoDbLocal().then((started) => {
    db = started;
    return started;
  });
  starting.catch(() => {});
  workDir = mkdtempSync(join(tmpdir(), 'commerce-sam-'));
  outdir = join(workDir, 'cdk.out');
  const app = new App({
    outdir,
    // No `stage`: the default must be prod, as `npm run synth` gives it. Asset metadata is the CLI default.
    context: { ...cdkJson.context, 'aws:cdk:enable-asset-metadata': true },
  });
  stack = createStageStack(app);
  template = app.synth().getStackByName(stack.stackName).template;

  const { endpoint } = await starting;
  const admin = new DynamoDBClient({ region: LOCAL_REGION, endpoint });
  await ensureTable(admin, LOCAL_TABLE_NAME);
  admin.destroy();
  keySet = newKeySetDocument();
  const ctx: AdminContext = {
    table: { doc: createDocumentClient({ endpoint }), name: LOCAL_TABLE_NAME },
    now: () => new Date(),
    webhooks: testWebhooks(keySet),
  };
  iam = await startIamProxy({
    upstream: endpoint,
    tableName: LOCAL_TABLE_NAME,
    policies: stackPolicies(stack, template),
    region: LOCAL_REGION,
  });
  moto = await startMoto(join(workDir, 'moto.log'));
  // What `npm start` writes to .local/demo.json, and what `npm run sam:events -- --secrets-manager`
  // adds after storing the key set there.
  demo = {
    ...(await seedDemo(ctx, 'http://127.0.0.1:3000')),
    dynamodb_endpoint: endpoint,
    function_endpoints: iam.endpoints,
    table_name: LOCAL_TABLE_NAME,
    secrets_manager_endpoint: moto.endpoint,
    webhook_key_set_arn: await storeKeySet(moto.endpoint, keySet),
    // What `npm run sam:events -- --sqs` adds: the delivery queue in moto's SQS API.
    sqs_endpoint: moto.endpoint,
    delivery_queue_url: await createDeliveryQueue(moto.endpoint),
  };
  ctx.table.doc.destroy();
  // Rendered to disk and read back, exactly what `npm run sam:events` leaves in .local/events/.
  const renderedDir = join(workDir, 'events');
  rendered = new Map(
    writeRenderedEvents(demo, renderedDir, undefined, template).map((path) => [
      path.slice(renderedDir.length + 1),
      JSON.parse(readFileSync(path, 'utf8')),
    ]),
  );
});

afterAll(async () => {
  await moto?.stop();
  await iam?.stop();
  await db?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

const functionIdOf = (name: string) =>
  stack.getLogicalId(stack.lambdaFunctions()[name]?.function.node.defaultChild as CfnElement);
/** The functions that use the table: the operations', the scheduled ones and the webhook pipeline's (the $default route's touches none). */
const tableFunctionIds = () =>
  new Set([...operations, ...scheduledFunctions, ...pipelineFunctions].map((fn) => functionIdOf(fn.name)));
const lambdaFunctions = () =>
  Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::Lambda::Function');

/** Where the Node.js runtime (and so SAM's emulation image) looks for `Handler`'s module. */
function handlerModule(assetDir: string, handler: string): { file: string; exportName: string } {
  const dot = handler.lastIndexOf('.');
  const [modulePath, exportName] = [handler.slice(0, dot), handler.slice(dot + 1)];
  const file = ['.js', '.mjs', '.cjs']
    .map((extension) => join(assetDir, `${modulePath}${extension}`))
    .find((candidate) => existsSync(candidate));
  if (!file) throw new Error(`no module for handler ${handler} in ${assetDir}`);
  return { file, exportName };
}

function codeOf(logicalId: string) {
  const resource = template.Resources[logicalId];
  const assetDir = join(outdir, resource?.Metadata['aws:asset:path']);
  return { assetDir, ...handlerModule(assetDir, resource?.Properties.Handler) };
}

/**
 * SAM's environment: the template's variables (a `Ref` becomes the logical id), each
 * overridden by the env-vars file's `Parameters`, then by the function's own section, only if the
 * template declares it, plus region and credentials. The container reaches the host as
 * host.docker.internal; this process is on the host already.
 */
function samEnvironment(logicalId: string): Record<string, string> {
  const declared: Record<string, Json> = template.Resources[logicalId]?.Properties.Environment.Variables;
  const file = rendered.get(ENV_VARS_FILE);
  const overrides: Record<string, string> = { ...file.Parameters, ...file[logicalId] };
  const variables: Record<string, string> = {};
  for (const [name, value] of Object.entries(declared)) {
    const resolved = typeof value === 'string' ? value : String(value.Ref ?? JSON.stringify(value));
    variables[name] = (overrides[name] ?? resolved).replace('host.docker.internal', '127.0.0.1');
  }
  return {
    PATH: process.env.PATH ?? '',
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: 'defaultkey',
    AWS_SECRET_ACCESS_KEY: 'defaultsecret',
    AWS_LAMBDA_FUNCTION_NAME: logicalId,
    ...variables,
  };
}

const LAMBDA_REQUEST_ID = 'c6af9ac6-7b61-11e6-9a41-93e812345678';

const INVOKER = `
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [file, exportName, outFile, eventFile] = process.argv.slice(2);
const exported = (await import(pathToFileURL(file).href))[exportName];
const answer = { exported: typeof exported, node: process.version };
if (eventFile && typeof exported === 'function') {
  const context = {
    awsRequestId: '${LAMBDA_REQUEST_ID}', functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST', memoryLimitInMB: '512', callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 10_000,
  };
  answer.result = await exported(JSON.parse(readFileSync(eventFile, 'utf8')), context);
}
writeFileSync(outFile, JSON.stringify(answer));
`;

/**
 * Loads the bundle in a fresh process of the Lambda runtime's Node (22, from npm: see
 * scripts/lambda-node.ts), a cold start, and, given an event, invokes it once.
 */
async function invokeBundle(
  logicalId: string,
  event?: unknown,
  environment: Record<string, string> = {},
): Promise<{ exported: string; node: string; result?: unknown; stdout: string }> {
  const { file, exportName } = codeOf(logicalId);
  const id = `${logicalId}-${randomBytes(4).toString('hex')}`;
  const invoker = join(workDir, 'invoke.mjs');
  if (!existsSync(invoker)) writeFileSync(invoker, INVOKER);
  const outFile = join(workDir, `${id}.out.json`);
  const args = [invoker, file, exportName, outFile];
  if (event !== undefined) {
    const eventFile = join(workDir, `${id}.event.json`);
    writeFileSync(eventFile, JSON.stringify(event));
    args.push(eventFile);
  }
  let stdout: string;
  try {
    ({ stdout } = await run(lambdaNode(), args, {
      env: { ...samEnvironment(logicalId), ...environment },
      cwd: workDir,
      timeout: 30_000,
    }));
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${logicalId} failed: ${(error as Error).message}\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
  return { ...JSON.parse(readFileSync(outFile, 'utf8')), stdout };
}

function replyOf(result: unknown): HttpReply {
  const response = fromLambdaResult(result);
  const text = response.body.toString('utf8');
  return {
    status: response.statusCode,
    headers: new Headers(response.headers),
    body: text === '' ? undefined : JSON.parse(text),
    text,
  };
}

describe('code SAM finds from the template', () => {
  it('has one function per operation, each with asset metadata pointing into the cloud assembly', () => {
    expect(
      lambdaFunctions()
        .map(([id]) => id)
        .sort(),
    ).toEqual(Object.keys(stack.lambdaFunctions()).map(functionIdOf).sort());
    for (const [, fn] of lambdaFunctions()) {
      expect(fn.Metadata).toMatchObject({ 'aws:asset:property': 'Code', 'aws:asset:is-bundled': true });
      // Relative to the template's directory, which is where SAM resolves it.
      expect(fn.Metadata['aws:asset:path']).toMatch(/^asset\.[0-9a-f]{64}$/);
    }
  });

  it('resolves every Handler to a module file in that directory', () => {
    for (const [logicalId, fn] of lambdaFunctions()) {
      expect(fn.Properties.Handler).toBe('index.handler');
      const { assetDir, file } = codeOf(logicalId);
      expect(dirname(file)).toBe(assetDir);
      expect(file.endsWith('index.mjs')).toBe(true);
    }
  });

  it('needs nothing outside the asset directory: the AWS SDK is bundled', () => {
    // Imported from a temporary directory, a bare `@aws-sdk/...` import would have no node_modules to find.
    for (let dir = outdir; dir !== dirname(dir); dir = dirname(dir)) {
      expect(existsSync(join(dir, 'node_modules')), `${dir}/node_modules`).toBe(false);
    }
  });

  it('carries no module the function does not run: the route table in no operation, the address guard only where an endpoint URL is checked or sent to', () => {
    // The modules of each bundle, by function name, as its source map lists them.
    const modules = Object.fromEntries(
      Object.keys(stack.lambdaFunctions()).map((name) => {
        const { file } = codeOf(functionIdOf(name));
        const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
        return [name, map.sources];
      }),
    );
    // Sources are relative to wherever CDK bundled: a module is known by its path from the repository's root.
    const holds = (sources: string[] | undefined, module: string) =>
      (sources ?? []).some((source) => source.endsWith(`/${module}`) && !source.includes('node_modules/'));
    const holding = (module: string) =>
      Object.entries(modules)
        .filter(([, sources]) => holds(sources, module))
        .map(([name]) => name)
        .sort();
    expect(holds(modules['list-wallets'], 'shared/http/api.ts')).toBe(true);
    // Every grant of every operation: read at synth, never at an operation's cold start. Only the two
    // functions that answer from the route table itself hold it (a 405's `Allow`, discovery's endpoints).
    expect(holding('shared/operations.ts')).toEqual(['oauth-discovery', 'route-not-found']);
    // The special-purpose ranges, parsed at load: only the webhook endpoint API (whose service checks
    // URLs as they are saved) and the deliverer (which checks each address it connects to) hold them.
    expect(holding('shared/webhooks/address-guard.ts')).toEqual(
      [
        ...operations.filter((op) => op.path.startsWith('/v1/webhooks/endpoints')).map((op) => op.name),
        'webhook-deliverer',
      ].sort(),
    );
  });

  it.each([...operations, ...pipelineFunctions].map((definition) => [definition.name] as const))(
    "%s: the bundle, imported in a fresh process of the runtime's Node 22, exports the named handler function",
    async (name) => {
      const { exported, node } = await invokeBundle(functionIdOf(name));
      expect(exported).toBe('function');
      // The runtime the functions declare, not the Node running the tests.
      expect(node).toMatch(new RegExp(`^v${LAMBDA_NODE_MAJOR}\\.`));
      expect(
        lambdaFunctions().every(([, fn]) => fn.Properties.Runtime === `nodejs${LAMBDA_NODE_MAJOR}.x`),
      ).toBe(true);
    },
  );
});

describe('events/ and events/env.json', () => {
  it('holds one sample payload 2.0 event per operation, routed by the template to that function', () => {
    const routes = Object.values(template.Resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route');
    const integrations = template.Resources;
    for (const op of operations) {
      const event = rendered.get(`${op.name}.json`);
      expect(event, `events/${op.name}.json`).toBeDefined();
      expect(event).toMatchObject({
        version: '2.0',
        isBase64Encoded: false,
        requestContext: { routeKey: event.routeKey, stage: '$default', http: { method: op.method } },
      });
      // A bearer credential, or (the token endpoints) the client's own credentials in the form.
      if (CLIENT_AUTHENTICATED.has(op.name))
        expect(event.body).toMatch(/client_id=\{\{oauth_client\.client_id\}\}|client_id=polar_ci_/);
      else expect(event.headers.authorization).toMatch(/^Bearer polar_(pat|cst|crt)_/);
      expect(event.requestContext.http.path).toBe(event.rawPath);

      const route = routes.find((r) => r.Properties.RouteKey === event.routeKey);
      expect(route, `route ${event.routeKey}`).toBeDefined();
      const integrationId = route?.Properties.Target['Fn::Join'][1][1].Ref as string;
      expect(integrations[integrationId]?.Properties.IntegrationUri).toEqual({
        'Fn::GetAtt': [functionIdOf(op.name), 'Arn'],
      });
    }
  });

  it('renders every placeholder from the demo data, and refuses one it cannot fill', () => {
    for (const [file, content] of renderEvents(demo)) {
      expect(JSON.stringify(content), file).not.toMatch(/\{\{\s*[\w.]+\s*\}\}/);
    }
    expect(rendered.get('delete-webhook-endpoint.json').pathParameters).toEqual({
      id: demo.webhook_endpoint_ids[0],
    });
    expect(() =>
      renderTemplate({ a: 'Bearer {{no_such_token}}' }, templateVariables(demo), 'x.json'),
    ).toThrow('x.json: no value for {{no_such_token}}');
  });

  it('points every function at the local table, each through its own IAM proxy endpoint, in variables the template declares', () => {
    const file = rendered.get(ENV_VARS_FILE);
    expect(file.Parameters).toEqual({ TABLE_NAME: LOCAL_TABLE_NAME });
    const sections = Object.keys(file).filter((key) => key !== 'Parameters');
    expect(sections.sort()).toEqual([...tableFunctionIds()].sort());
    for (const op of [...operations, ...scheduledFunctions]) {
      const port = new URL(iam?.endpointFor(op.name) ?? '').port;
      expect(file[functionIdOf(op.name)]).toEqual({
        [LOCAL_ENDPOINT_ENV]: `http://host.docker.internal:${port}`,
        // The functions that seal or open webhook secrets: the key set in the local Secrets Manager.
        ...('webhookKeySet' in op && {
          [LOCAL_SECRETS_ENDPOINT_ENV]: `http://host.docker.internal:${new URL(demo.secrets_manager_endpoint).port}`,
          WEBHOOK_KEY_SET_ID: demo.webhook_key_set_arn,
        }),
      });
    }
    const sqsPort = new URL(demo.sqs_endpoint).port;
    for (const fn of pipelineFunctions) {
      const port = new URL(iam?.endpointFor(fn.name) ?? '').port;
      expect(file[functionIdOf(fn.name)]).toEqual({
        [LOCAL_ENDPOINT_ENV]: `http://host.docker.internal:${port}`,
        // The delivery queue in the local SQS API.
        [LOCAL_SQS_ENDPOINT_ENV]: `http://host.docker.internal:${sqsPort}`,
        DELIVERY_QUEUE_URL: demo.delivery_queue_url.replace(
          new URL(demo.delivery_queue_url).origin,
          `http://host.docker.internal:${sqsPort}`,
        ),
        ...('webhookKeySet' in fn && {
          [LOCAL_SECRETS_ENDPOINT_ENV]: `http://host.docker.internal:${new URL(demo.secrets_manager_endpoint).port}`,
          WEBHOOK_KEY_SET_ID: demo.webhook_key_set_arn,
        }),
      });
    }
    // SAM overrides declared variables and silently drops the rest.
    for (const [logicalId, fn] of lambdaFunctions().filter(([id]) => tableFunctionIds().has(id))) {
      for (const name of [...Object.keys(file.Parameters), ...Object.keys(file[logicalId])]) {
        expect(Object.keys(fn.Properties.Environment.Variables), `${logicalId} declares ${name}`).toContain(
          name,
        );
      }
    }
  });

  it('leaves the deployed functions on the regional endpoint: the declared endpoint variable is empty', async () => {
    for (const [, fn] of lambdaFunctions().filter(([id]) => tableFunctionIds().has(id))) {
      expect(fn.Properties.Environment.Variables[LOCAL_ENDPOINT_ENV]).toBe('');
      expect(fn.Properties.Environment.Variables[LOCAL_SECRETS_ENDPOINT_ENV] ?? '').toBe('');
      expect(fn.Properties.Environment.Variables[LOCAL_SQS_ENDPOINT_ENV] ?? '').toBe('');
    }
    vi.stubEnv(LOCAL_ENDPOINT_ENV, '');
    try {
      const client = new DynamoDBClient({
        region: 'eu-west-1',
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      });
      let hostname: string | undefined;
      client.middlewareStack.add(
        () => async (args) => {
          hostname = (args.request as { hostname?: string }).hostname;
          throw new Error('stop before sending');
        },
        { step: 'finalizeRequest' },
      );
      await expect(client.send(new ListTablesCommand({}))).rejects.toThrow('stop before sending');
      expect(hostname).toBe('dynamodb.eu-west-1.amazonaws.com');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

/**
 * What each operation's sample event must give through its bundle. Keyed by operation name: a new
 * operation does not compile until it has a sample event and an expectation here.
 */
const sampleInvocations = {
  'create-client': {
    what: '201 with a client id and secret, not cacheable',
    status: 201,
    check: (reply: HttpReply) => {
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(reply.body).toMatchObject({
        client_id: expect.any(String),
        client_secret: expect.any(String),
        client_name: 'SAM local sample',
        redirect_uris: ['https://app.example.com/oauth/callback'],
      });
    },
  },
  'create-subscription': {
    what: '201 subscription of the demo customer to the free product',
    status: 201,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        customer_id: demo.customer_id,
        product_id: demo.free_product_id,
        metadata: { source: 'sam-local' },
      }),
  },
  'list-wallets': {
    what: '200, the first page of the demo customer wallets, highest balance first',
    status: 200,
    check: (reply: HttpReply) => {
      const body = reply.body as { items: { balance: number }[]; pagination: unknown };
      expect(body.pagination).toMatchObject({ total_count: 14, max_page: 3 });
      expect(body.items.map((wallet) => wallet.balance)).toEqual([123_456, 60_000, 10_000, 4000, 2500]);
    },
  },
  'delete-webhook-endpoint': {
    what: '204 with no body',
    status: 204,
    check: (reply: HttpReply) => expect(reply.text).toBe(''),
  },
  'create-customer-session': {
    what: '201, a session of the demo customer whose portal URL carries its token',
    status: 201,
    check: (reply: HttpReply) => {
      const session = reply.body as { token: string; customer_id: string; customer_portal_url: string };
      expect(session.customer_id).toBe(demo.customer_id);
      expect(new URL(session.customer_portal_url).searchParams.get('customer_session_token')).toBe(
        session.token,
      );
    },
  },
  'get-wallet': {
    what: "200, one of the demo customer's wallets",
    status: 200,
    check: (reply: HttpReply) => expect(reply.body).toMatchObject({ customer_id: demo.customer_id }),
  },
  'get-product': {
    what: 'the free plan, with its prices',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.free_product_id, is_recurring: true }),
  },
  'list-subscriptions': {
    what: "200, the large customer's subscriptions to the free product: the demo subscription",
    status: 200,
    check: (reply: HttpReply) => {
      const body = reply.body as { items: { id: string }[]; pagination: unknown };
      expect(body.pagination).toEqual({ total_count: 1, max_page: 1 });
      expect(body.items).toMatchObject([{ id: demo.subscription_id }]);
    },
  },
  'list-customer-subscriptions': {
    what: "200, the demo customer's live subscriptions, newest first",
    status: 200,
    check: (reply: HttpReply) => {
      const body = reply.body as { items: { id: string; customer_id: string }[] };
      expect(body.items.map((s) => s.id)).toContain(demo.customer_subscription_id);
      for (const item of body.items) expect(item.customer_id).toBe(demo.customer_id);
    },
  },
  'get-customer-subscription': {
    what: "200, the demo customer's subscription, its product embedding the organization",
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.customer_subscription_id,
        product: { id: demo.free_product_id, organization: { id: demo.organization_id } },
      }),
  },
  'cancel-customer-subscription': {
    what: "200, the demo customer's subscription set to cancel at the end of its period",
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.customer_subscription_id,
        status: 'active',
        cancel_at_period_end: true,
      }),
  },
  'update-customer-subscription': {
    what: '200, the cancellation above taken back',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.customer_subscription_id, cancel_at_period_end: false }),
  },
  'get-subscription': {
    what: 'the demo subscription, with its customer and product',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.subscription_id,
        customer: { id: demo.large_customer_id },
        product: { id: demo.free_product_id },
      }),
  },
  'get-client': {
    what: "200, the demo client's registration, without its secret",
    status: 200,
    check: (reply: HttpReply) => {
      expect(reply.body).toMatchObject({ client_id: demo.oauth_client.client_id, client_name: 'Demo app' });
      expect(reply.text).not.toContain('polar_cs_');
    },
  },
  'update-client': {
    what: '200, the registration replaced',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        client_id: demo.oauth_client.client_id,
        client_name: 'Demo app, renamed',
      }),
  },
  'delete-client': {
    what: '204 with no body',
    status: 204,
    check: (reply: HttpReply) => expect(reply.text).toBe(''),
  },
  'update-subscription': {
    what: '200, the demo subscription canceled at the end of its period',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.subscription_id,
        status: 'active',
        cancel_at_period_end: true,
        customer_cancellation_reason: 'too_expensive',
      }),
  },
  'revoke-subscription': {
    what: '200, the demo subscription ended now',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.subscription_id, status: 'canceled' }),
  },
  'create-customer': {
    what: '201, a customer of the demo organization',
    status: 201,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        email: 'sam.local@example.com',
        organization_id: demo.organization_id,
      }),
  },
  'get-customer': {
    what: 'the demo customer',
    status: 200,
    check: (reply: HttpReply) => expect(reply.body).toMatchObject({ id: demo.customer_id }),
  },
  'list-customers': {
    what: 'the first two customers of the demo organization by e-mail address',
    status: 200,
    check: (reply: HttpReply) =>
      expect((reply.body as { items: { email: string }[] }).items.map((c) => c.email)).toEqual([
        'ada@customer.example',
        'big@customer.example',
      ]),
  },
  'get-customer-external': {
    what: 'the demo customer, by its external id',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.customer_id, external_id: demo.customer_external_id }),
  },
  'update-customer': {
    what: 'the second demo customer, renamed',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.second_customer_id, name: 'Grace Hopper', locale: 'en' }),
  },
  'update-customer-external': {
    what: 'the demo customer, its metadata replaced, by its external id',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.customer_id, metadata: { source: 'sam-local' } }),
  },
  'delete-customer': {
    what: '204: the second demo customer deleted',
    status: 204,
    check: (reply: HttpReply) => expect(reply.text).toBe(''),
  },
  'delete-customer-external': {
    what: "204: the create-customer sample's customer (external id sam-local-1) deleted and anonymized",
    status: 204,
    check: (reply: HttpReply) => expect(reply.text).toBe(''),
  },
  'create-product': {
    what: '201, a free monthly product of the demo organization',
    status: 201,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        name: 'SAM local plan',
        organization_id: demo.organization_id,
        is_recurring: true,
        prices: [{ amount_type: 'fixed', price_amount: 0, price_currency: 'usd' }],
      }),
  },
  'list-products': {
    what: "200, the demo organization's recurring products by name",
    status: 200,
    check: (reply: HttpReply) => {
      const body = reply.body as { items: { name: string; is_recurring: boolean }[] };
      expect(body.items[0]?.name).toBe('Free plan');
      expect(body.items.every((product) => product.is_recurring)).toBe(true);
      const names = body.items.map((product) => product.name.toLowerCase());
      expect(names).toEqual([...names].sort());
    },
  },
  'update-product': {
    what: '200, the paid plan renamed',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.paid_product_id,
        name: 'Pro plan, renamed',
        metadata: { source: 'sam-local' },
      }),
  },
  'create-webhook-endpoint': {
    what: '201, an endpoint of the demo organization with a whsec_ secret (the key set read from Secrets Manager)',
    status: 201,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        url: 'https://sam.local.example/hooks',
        organization_id: demo.organization_id,
        secret: expect.stringMatching(/^whsec_/),
      }),
  },
  'list-webhook-endpoints': {
    what: "a page of the demo organization's endpoints, each with its secret",
    status: 200,
    check: (reply: HttpReply) => {
      const page = reply.body as { items: { secret: string }[]; pagination: { total_count: number } };
      expect(page.pagination.total_count).toBeGreaterThan(0);
      for (const item of page.items) expect(item.secret).toMatch(/^whsec_/);
    },
  },
  'get-webhook-endpoint': {
    what: 'a demo endpoint, its secret opened with the key set',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.webhook_endpoint_ids[1],
        secret: expect.stringMatching(/^whsec_/),
      }),
  },
  'update-webhook-endpoint': {
    what: 'the demo endpoint renamed',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({ id: demo.webhook_endpoint_ids[1], name: 'Renamed by SAM local' }),
  },
  'reset-webhook-endpoint-secret': {
    what: 'a demo endpoint with a new secret',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        id: demo.webhook_endpoint_ids[2],
        secret: expect.stringMatching(/^whsec_/),
      }),
  },
  authorize: {
    what: "200, what a consent to the demo client's request would grant",
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toMatchObject({
        client: { client_id: demo.oauth_client.client_id },
        sub_type: 'organization',
        scopes: ['openid'],
      }),
  },
  consent: {
    what: "303 to the demo client's redirect URI with a code",
    status: 303,
    check: (reply: HttpReply) => {
      const location = new URL(reply.headers.get('location') as string);
      expect(`${location.origin}${location.pathname}`).toBe('http://127.0.0.1:8080/callback');
      expect(location.searchParams.get('code')).toMatch(/^polar_ac_/);
      expect(location.searchParams.get('state')).toBe('sam-local');
    },
  },
  'request-token': {
    what: "200, the demo client's refresh token exchanged for new tokens (rotation)",
    status: 200,
    check: (reply: HttpReply) => {
      expect(reply.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'openid email' });
      expect((reply.body as { refresh_token: string }).refresh_token).not.toBe(
        demo.oauth_tokens.refresh_token,
      );
      expect(reply.headers.get('cache-control')).toBe('no-store');
    },
  },
  // The samples run in the route table's order: by now Request Token has replaced the demo tokens.
  'revoke-token': {
    what: "200 {}, the demo client's (replaced) refresh token revoked with its grant",
    status: 200,
    check: (reply: HttpReply) => expect(reply.body).toEqual({}),
  },
  'introspect-token': {
    what: "200, whether the demo client's access token is active (ended by the refresh before it)",
    status: 200,
    check: (reply: HttpReply) => {
      const body = reply.body as { active: boolean; client_id?: string };
      if (body.active) expect(body.client_id).toBe(demo.oauth_client.client_id);
      else expect(body).toEqual({ active: false });
    },
  },
  userinfo: {
    what: '200, the demo user as the demo personal access token sees it',
    status: 200,
    check: (reply: HttpReply) =>
      expect(reply.body).toEqual({
        sub: expect.any(String),
        email: expect.stringContaining('@'),
        email_verified: false,
      }),
  },
  'list-webhook-deliveries': {
    what: '200, the attempts of one demo endpoint, newest first',
    status: 200,
    check: (reply: HttpReply) => {
      const page = reply.body as {
        items: { webhook_event: { id: string } }[];
        pagination: { total_count: number };
      };
      expect(page.pagination.total_count).toBeGreaterThan(0);
      expect(page.items.map((item) => item.webhook_event.id)).toContain(demo.webhook_event_id);
    },
  },
  'redeliver-webhook-event': {
    what: "202, the demo webhook event's next round started (the relay queues it, below)",
    status: 202,
    check: (reply: HttpReply) => expect(reply.body).toBeNull(),
  },
} satisfies Record<OperationName, { what: string; status: number; check: (reply: HttpReply) => void }>;

/** The operations a client authenticates at with its own credentials (RFC 6749 §2.3), not a bearer token. */
const CLIENT_AUTHENTICATED: ReadonlySet<string> = new Set([
  'request-token',
  'revoke-token',
  'introspect-token',
]);

/** POSTs that only read (RFC 7662 introspection): a form is a POST body, not a write. */
const READ_ONLY_POSTS: ReadonlySet<string> = new Set(['introspect-token']);

describe('sam local invoke <function> -e .local/events/<operation>.json --env-vars .local/events/env.json', () => {
  it.each(operations.map((op) => [op.name, sampleInvocations[op.name].what, op] as const))(
    '%s: %s',
    async (name, _, op) => {
      const event = rendered.get(`${name}.json`);
      const { result, stdout } = await invokeBundle(functionIdOf(name), event);
      const reply = replyOf(result);
      const expected = sampleInvocations[name];
      expect(reply.status).toBe(expected.status);
      expectDocumented(op.operationId, reply);
      expected.check(reply);
      // Its one request line: the log fields, and a valid embedded-metric-format document.
      const [line, ...more] = requestLines(stdout);
      expect(more).toEqual([]);
      expect(line).toMatchObject({
        level: 'info',
        message: 'request',
        operation: name,
        route: event.routeKey,
        method: op.method,
        status: expected.status,
        cold_start: true,
        request_id: event.requestContext.requestId,
        aws_request_id: LAMBDA_REQUEST_ID,
        Requests: 1,
        Errors4xx: 0,
        Errors5xx: 0,
        ColdStarts: 1,
      });
      expect(line?.dynamodb.round_trips).toBeGreaterThan(0);
      expect(line?.DynamoDBRoundTrips).toBe(line?.dynamodb.round_trips);
      expect(line?.dynamodb.read_units).toBeGreaterThan(0);
      // A read-only operation consumed read units only; every write also reads its token first.
      if (op.method === 'GET' || READ_ONLY_POSTS.has(name)) expect(line?.dynamodb.write_units).toBe(0);
      else expect(line?.dynamodb.write_units).toBeGreaterThan(0);
      expectEmf(line);
    },
  );
});

describe('sam local invoke <the subscription clock> -e .local/events/subscription-clock.json', () => {
  it('the bundle runs a scheduled event against the local table: a full run, reported in one line', async () => {
    const event = rendered.get('subscription-clock.json');
    expect(event).toMatchObject({ source: 'aws.events', 'detail-type': 'Scheduled Event' });
    const { result, stdout } = await invokeBundle(functionIdOf(scheduledFunctions[0].name), event);
    // Nothing of the demo is due now; the run reads every shard of the due index and completes.
    expect(result).toMatchObject({ renewed: 0, ended: 0, complete: true });
    expect((result as { batches: number }).batches).toBeGreaterThanOrEqual(4);
    const lines = stdout
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text) as LogLine);
    expect(lines.filter((line) => line.message === 'subscription clock')).toHaveLength(1);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: JSON log lines, asserted field by field
type LogLine = Record<string, any>;

/** The request lines a bundle wrote to stdout (anything else there is not one). */
function requestLines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .filter((text) => text.startsWith('{'))
    .map((text) => JSON.parse(text) as LogLine)
    .filter((line) => line.message === 'request');
}

const EMF_UNITS = new Set(['Count', 'Milliseconds', 'Seconds', 'Bytes', 'None']);

/**
 * CloudWatch's embedded metric format: `_aws` with a millisecond timestamp and metric directives;
 * every dimension names a string member of the line and every metric a number member (else
 * CloudWatch drops the metric).
 */
function expectEmf(line: LogLine | undefined): void {
  expect(line?._aws?.Timestamp).toEqual(expect.any(Number));
  expect(Math.abs(Date.now() - (line?._aws.Timestamp ?? 0))).toBeLessThan(60_000);
  const directives = line?._aws.CloudWatchMetrics as LogLine[];
  expect(directives.length).toBeGreaterThan(0);
  for (const directive of directives) {
    expect(directive.Namespace).toBe(
      lambdaFunctions()[0]?.[1].Properties.Environment.Variables.METRICS_NAMESPACE,
    );
    expect(directive.Dimensions.length).toBeGreaterThan(0);
    for (const set of directive.Dimensions as string[][]) {
      expect(set.length).toBeLessThanOrEqual(30);
      for (const dimension of set) expect(typeof line?.[dimension], dimension).toBe('string');
    }
    for (const metric of directive.Metrics as { Name: string; Unit: string }[]) {
      expect(typeof line?.[metric.Name], metric.Name).toBe('number');
      expect(EMF_UNITS).toContain(metric.Unit);
    }
  }
}

describe('the request line of a bundled function', () => {
  it('names the error type of a refusal, as a metric dimension too, and carries no credential', async () => {
    const event = structuredClone(rendered.get('get-product.json'));
    event.headers.authorization = 'Bearer polar_pat_thisTokenDoesNotExist0000000000000000000000';
    const { result, stdout } = await invokeBundle(functionIdOf('get-product'), event);
    expect(replyOf(result).status).toBe(401);
    const [line] = requestLines(stdout);
    expect(line).toMatchObject({
      operation: 'get-product',
      status: 401,
      error_type: 'invalid_token',
      Errors4xx: 1,
      Errors5xx: 0,
      principal_kind: null,
    });
    expect(line?._aws.CloudWatchMetrics[0].Dimensions).toContainEqual(['service', 'operation', 'error_type']);
    expectEmf(line);
    expect(stdout).not.toContain('thisTokenDoesNotExist');
  });

  it('says who called: the principal kind and organization, never the token', async () => {
    const event = rendered.get('get-product.json');
    const { stdout } = await invokeBundle(functionIdOf('get-product'), event);
    const [line] = requestLines(stdout);
    expect(line).toMatchObject({ principal_kind: 'user', organization_ids: [demo.organization_id] });
    expect(stdout).not.toContain(event.headers.authorization.slice('Bearer '.length));
  });

  it('at LOG_LEVEL=warn keeps the metrics and drops the log fields', async () => {
    const { stdout } = await invokeBundle(functionIdOf('get-product'), rendered.get('get-product.json'), {
      LOG_LEVEL: 'warn',
    });
    const lines = stdout
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text));
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toHaveProperty('message');
    expect(lines[0]).not.toHaveProperty('request_id');
    expectEmf(lines[0]);
    expect(lines[0]).toMatchObject({ operation: 'get-product', Requests: 1 });
  });
});

describe("the $default route's function, bundled: what API Gateway answers for routes no operation takes", () => {
  let local: ApiServer;
  beforeAll(async () => {
    // The local API, whose $default route runs the same function in process.
    local = await startApiServer({
      port: 0,
      quiet: true,
      loadHandler: async (fn) => {
        if (fn.name !== routeNotFound.name) throw new Error(`${fn.name} must not be called here`);
        return ((await import('../../functions/route-not-found/handler.ts')) as { handler: LambdaHandler })
          .handler;
      },
    });
  });
  afterAll(() => local?.close());

  it.each([
    ['GET', '/v1/nope'],
    ['GET', '/'],
    ['PUT', '/v1/subscriptions/'],
    ['DELETE', '/v1/customer-portal/wallets'],
    ['PUT', '/v1/webhooks/endpoints/5a1c0e8e-8f0a-4c56-9d0b-7b1c2d3e4f50'],
    ['OPTIONS', '/v1/oauth2/register'],
  ])('%s %s: the bundle answers exactly what the local API answers', async (method, path) => {
    const event = toApiGatewayEvent(
      { method, url: path, httpVersion: '1.1', rawHeaders: ['host', 'api.test'], socket: {} },
      Buffer.alloc(0),
      { routeKey: DEFAULT_ROUTE_KEY },
    );
    const bundled = replyOf((await invokeBundle(functionIdOf(routeNotFound.name), event)).result);
    const served = await fetchJson(`${local.url}${path}`, { method });
    expect(bundled.status).toBe(served.status);
    expect(bundled.body).toEqual(served.body);
    expect(bundled.headers.get('content-type')).toBe('application/json');
    expect(bundled.headers.get('allow')).toBe(served.headers.get('allow'));
    expect([404, 405]).toContain(bundled.status);
    expect(bundled.body).toEqual(
      bundled.status === 404
        ? { error: 'NotFound', detail: 'Not Found' }
        : { error: 'MethodNotAllowed', detail: 'Method Not Allowed' },
    );
  });
});

describe('the API reference, bundled: its assets ship with the function (no node_modules on Lambda)', () => {
  const get = async (path: string) => {
    const event = toApiGatewayEvent(
      {
        method: 'GET',
        url: path,
        httpVersion: '1.1',
        rawHeaders: ['host', 'api.test', 'accept-encoding', 'gzip'],
        socket: {},
      },
      Buffer.alloc(0),
      { routeKey: `GET ${path}` },
    );
    const response = fromLambdaResult((await invokeBundle(functionIdOf(apiReference.name), event)).result);
    const gzipped = response.headers['content-encoding'] === 'gzip';
    return { response, text: (gzipped ? gunzipSync(response.body) : response.body).toString('utf8') };
  };

  it('serves the OpenAPI document', async () => {
    const { response, text } = await get('/openapi.json');
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(text)).toEqual(loadOpenApi());
  });

  it.each(Object.keys(swaggerUiAssets))('serves %s byte for byte from beside the bundle', async (file) => {
    // The bundle runs from a temporary cdk.out: no node_modules above it to fall back to.
    expect(existsSync(join(codeOf(functionIdOf(apiReference.name)).assetDir, file))).toBe(true);
    const { response, text } = await get(`/docs/${file}`);
    expect(response.statusCode).toBe(200);
    const require = createRequire(import.meta.url);
    expect(text).toBe(readFileSync(require.resolve(`swagger-ui-dist/${file}`), 'utf8'));
  });
});

describe('the webhook pipeline, bundled: a stream record through the relay, its messages through the deliverer', () => {
  it('the relay records a webhook event per subscribed endpoint and queues them; the deliverer opens the secret from Secrets Manager, attempts, records and schedules the retry', async () => {
    const table = { doc: createDocumentClient({ endpoint: demo.dynamodb_endpoint }), name: LOCAL_TABLE_NAME };
    const sqs = new SQSClient({
      endpoint: demo.sqs_endpoint,
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      // The targets as the relay must find them: live, enabled, subscribed (the demo's subscribe to subscription.created).
      const targets = (await organizationWebhookEndpoints(table, demo.organization_id)).filter(
        (endpoint) => endpoint.enabled && endpoint.events.includes('subscription.created'),
      );
      expect(targets.length).toBeGreaterThan(0);
      const at = new Date().toISOString();
      const subject = newId();
      const event: OutboxEventRecord = {
        id: newId(),
        organization_id: demo.organization_id,
        type: 'subscription.created',
        timestamp: at,
        payload: envelope('subscription.created', at, { id: subject }),
        subject_kind: 'subscription',
        subject_id: subject,
      };
      const key = outboxKeys.event('subscription', subject, at, 0, event.id);
      // The Redeliver sample invocation (above) recorded its request beside the demo event's new round.
      const redeliveries = await table.doc.send(
        new QueryCommand({
          TableName: LOCAL_TABLE_NAME,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
          ExpressionAttributeValues: {
            ':pk': keys.webhookEvent(demo.webhook_event_id).PK,
            ':sk': REDELIVERY_SORT_KEY_PREFIX,
          },
        }),
      );
      expect(redeliveries.Items).toHaveLength(1);
      // The records Lambda's DynamoDB stream mapping hands the relay (NEW_IMAGE, inserts): the
      // outbox item, and the Redeliver request.
      const streamEvent = {
        Records: [
          { ...key, entity: 'outbox_event', ...event },
          redeliveries.Items?.[0] as Record<string, unknown>,
        ].map((image, i) => ({
          eventID: String(i + 1),
          eventName: 'INSERT',
          eventVersion: '1.1',
          eventSource: 'aws:dynamodb',
          awsRegion: LOCAL_REGION,
          dynamodb: {
            Keys: marshall({ PK: image.PK, SK: image.SK }),
            NewImage: marshall(image),
            SequenceNumber: `10000000000000000000${i + 1}`,
            SizeBytes: 512,
            StreamViewType: 'NEW_IMAGE',
          },
          eventSourceARN: `arn:aws:dynamodb:${LOCAL_REGION}:123456789012:table/${LOCAL_TABLE_NAME}/stream/x`,
        })),
      };
      await invokeBundle(functionIdOf('webhook-relay'), streamEvent);
      const ids = targets.map((endpoint) => webhookEventId(event.id, endpoint.id)).sort();
      for (const id of ids) {
        expect(await getWebhookEvent(table, id)).toMatchObject({ status: 'pending', attempts: 0, round: 1 });
      }

      const messages = await sqsQueue(sqs, demo.delivery_queue_url).receive({ max: 10, waitSeconds: 1 });
      // The relay's: one per target, and the demo event's second round.
      expect(messages.map((m) => JSON.parse(m.body).webhook_event_id).sort()).toEqual(
        [...ids, demo.webhook_event_id].sort(),
      );
      const { result, stdout } = await invokeBundle(
        functionIdOf('webhook-deliverer'),
        sqsEvent(messages, `arn:aws:sqs:${LOCAL_REGION}:123456789012:${LOCAL_DELIVERY_QUEUE_NAME}`),
      );
      // The demo's endpoints are at hooks.*.example, a name no DNS answers: each first attempt fails
      // and is retried (reported failed, its visibility set by the ladder).
      expect((result as SQSBatchResponse).batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
        messages.map((m) => m.messageId).sort(),
      );
      for (const id of ids) {
        expect(await getWebhookEvent(table, id)).toMatchObject({
          status: 'pending',
          attempts: 1,
          last_http_code: null,
        });
      }
      // The redelivered one: its second round's first attempt.
      expect(await getWebhookEvent(table, demo.webhook_event_id)).toMatchObject({
        status: 'pending',
        round: 2,
        attempts: 1,
      });
      // Signing needed the key set: opened from Secrets Manager (moto) with the bundle's own grant.
      expect(stdout).not.toMatch(/"level":"error"/);
    } finally {
      sqs.destroy();
      table.doc.destroy();
    }
  });
});
