/**
 * The world `sam local invoke -t cdk.out/CommerceApi-prod.template.json <LogicalId>` and
 * `sam local start-api` rely on, built without SAM or Docker for test/infra/sam.test.ts (the contract,
 * and a representative function run end to end) and test/infra/bundles.test.ts (every bundle run):
 * the prod stack's bundles from the infra tests' shared synth (test/support/synth.ts), each function
 * found, loaded and invoked the way SAM would — code from its `aws:asset:path`, module and export from
 * `Handler`, environment from the template overridden by `events/env.json` (only for variables the
 * template declares, as SAM does), event from `events/<operation>.json` rendered by
 * `npm run sam:events`'s renderer — each in a fresh Node process of the Lambda runtime's Node 22,
 * against DynamoDB Local seeded by the demo seed, through the IAM proxy: each bundle reaches DynamoDB
 * on its own endpoint, under the policy this very template gives it.
 *
 * `useSamWorld()` registers the file's beforeAll/afterAll; the exported bindings are live.
 */

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect } from 'vitest';
import type { AdminContext } from '#scripts/admin/commands.ts';
import { type Moto, startMoto } from '#scripts/deploy/moto.ts';
import { lambdaNode } from '#scripts/lambda-node.ts';
import { fromLambdaResult } from '#scripts/local/apigw.ts';
import { ensureTable } from '#scripts/local/create-table.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '#scripts/local/dynamodb-local.ts';
import { policiesFromTemplate } from '#scripts/local/iam/policy.ts';
import { type IamProxy, startIamProxy } from '#scripts/local/iam/proxy.ts';
import { type DemoData, seedDemo } from '#scripts/local/seed.ts';
import { LOCAL_REGION, LOCAL_TABLE_NAME } from '#scripts/local/stack.ts';
import { createDeliveryQueue, ENV_VARS_FILE, storeKeySet, writeRenderedEvents } from '#scripts/sam-events.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { newKeySetDocument } from '#shared/domain/keyring.ts';
import { type OperationName, operations, pipelineFunctions, scheduledFunctions } from '#shared/operations.ts';
import { expectDocumented, type HttpReply } from './contract.ts';
import { testWebhooks } from './dynamodb.ts';
import { type SharedStageModel, sharedStage } from './stages.ts';

const run = promisify(execFile);

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

export let workDir: string;
/** The shared synth's prod cloud assembly: `aws:asset:path` is relative to it. */
export let outdir: string;
export let model: SharedStageModel;
export let template: { Resources: Record<string, { Type: string; Properties: Json; Metadata?: Json }> };
let db: DynamoDbLocal | undefined;
/** moto's Secrets Manager API, holding the webhook key set as the stack's secret holds it on AWS. */
let moto: Moto | undefined;
export let iam: IamProxy | undefined;
export let demo: Demo;
export let rendered: Map<string, Json>;
/** The webhook key set the seed sealed secrets with; the bundles read it from Secrets Manager (moto). */
let keySet: string;

/** The file's DynamoDB Local, seed, IAM proxy, moto and rendered events (its own: invocations write). */
export function useSamWorld(): void {
  beforeAll(async () => {
    const starting = startDynamoDbLocal().then((started) => {
      db = started;
      return started;
    });
    starting.catch(() => {});
    workDir = mkdtempSync(join(tmpdir(), 'commerce-sam-'));
    // No `stage`: the default is prod, as `npm run synth` gives it, bundled, with asset metadata.
    const prod = sharedStage('prod');
    model = prod.model;
    outdir = model.outdir;
    template = prod.json;

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
      policies: policiesFromTemplate(
        template,
        model.ids.table,
        Object.fromEntries(
          Object.entries(model.functions).map(([name, ids]) => [name, { roleLogicalId: ids.role }]),
        ),
      ),
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
}

export const functionIdOf = (name: string) => {
  const ids = model.functions[name];
  if (!ids) throw new Error(`no function ${name}`);
  return ids.function;
};
/** The functions that use the table: the operations', the scheduled ones and the webhook pipeline's (the $default route's touches none). */
export const tableFunctionIds = () =>
  new Set([...operations, ...scheduledFunctions, ...pipelineFunctions].map((fn) => functionIdOf(fn.name)));
export const lambdaFunctions = () =>
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

export function codeOf(logicalId: string) {
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
export function samEnvironment(logicalId: string): Record<string, string> {
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

export const LAMBDA_REQUEST_ID = 'c6af9ac6-7b61-11e6-9a41-93e812345678';

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
export async function invokeBundle(
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

export function replyOf(result: unknown): HttpReply {
  const response = fromLambdaResult(result);
  const text = response.body.toString('utf8');
  return {
    status: response.statusCode,
    headers: new Headers(response.headers),
    body: text === '' ? undefined : JSON.parse(text),
    text,
  };
}

interface SampleInvocation {
  what: string;
  status: number;
  check: (reply: HttpReply) => void;
  /** Samples whose writes this one reads, or whose data it ends (a client deleted): they run first. */
  after?: readonly OperationName[];
}

/**
 * What each operation's sample event must give through its bundle. Keyed by operation name: a new
 * operation does not compile until it has a sample event and an expectation here.
 */
export const sampleInvocations = {
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
    after: ['cancel-customer-subscription'],
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
    after: [
      'get-client',
      'update-client',
      'authorize',
      'consent',
      'request-token',
      'revoke-token',
      'introspect-token',
    ],
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
    after: ['update-subscription'],
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
    after: ['create-customer'],
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
  // By now Request Token has replaced the demo tokens.
  'revoke-token': {
    after: ['request-token'],
    what: "200 {}, the demo client's (replaced) refresh token revoked with its grant",
    status: 200,
    check: (reply: HttpReply) => expect(reply.body).toEqual({}),
  },
  'introspect-token': {
    after: ['request-token'],
    what: "200, whether the demo client's access token is active (ended by the refresh before it)",
    status: 200,
    check: (reply: HttpReply) => {
      const body = reply.body as { active: boolean; client_id?: string };
      if (body.active) expect(body.client_id).toBe(demo.oauth_client.client_id);
      else expect(body).toEqual({ active: false });
    },
  },
  'list-authorized-clients': {
    what: "200, the demo user's applications: the demo client",
    status: 200,
    check: (reply: HttpReply) =>
      expect(
        (reply.body as { items: { client_id: string }[] }).items.map((item) => item.client_id),
      ).toContain(demo.oauth_client.client_id),
  },
  'revoke-authorized-client': {
    what: '404, a client the demo user never authorized',
    status: 404,
    check: (reply: HttpReply) =>
      expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' }),
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
} satisfies Record<OperationName, SampleInvocation>;

/**
 * The operations in the order their samples run against one table: the route table's, except that a
 * sample runs after those named in its `after` (so the document's order may change freely).
 */
export function sampleOrder(): (typeof operations)[number][] {
  const byName = new Map(operations.map((op) => [op.name, op]));
  const ordered: (typeof operations)[number][] = [];
  const placed = new Set<string>();
  const place = (name: OperationName) => {
    if (placed.has(name)) return;
    placed.add(name);
    const sample: SampleInvocation = sampleInvocations[name];
    for (const before of sample.after ?? []) place(before);
    ordered.push(byName.get(name) as (typeof operations)[number]);
  };
  for (const op of operations) place(op.name);
  return ordered;
}

/** The operations a client authenticates at with its own credentials (RFC 6749 §2.3), not a bearer token. */
export const CLIENT_AUTHENTICATED: ReadonlySet<string> = new Set([
  'request-token',
  'revoke-token',
  'introspect-token',
]);

/** POSTs that only read (RFC 7662 introspection): a form is a POST body, not a write. */
export const READ_ONLY_POSTS: ReadonlySet<string> = new Set(['introspect-token']);

// biome-ignore lint/suspicious/noExplicitAny: JSON log lines, asserted field by field
export type LogLine = Record<string, any>;

/** The request lines a bundle wrote to stdout (anything else there is not one). */
export function requestLines(stdout: string): LogLine[] {
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
export function expectEmf(line: LogLine | undefined): void {
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

/**
 * `sam local invoke <function> -e .local/events/<operation>.json --env-vars .local/events/env.json`:
 * the operation's bundle answers its sample event as `sampleInvocations` says, documented, in one
 * request line with a valid embedded-metric-format document.
 */
export async function expectSampleInvocation(op: (typeof operations)[number]) {
  const name = op.name;
  const event = rendered.get(`${name}.json`);
  const invoked = await invokeBundle(functionIdOf(name), event);
  const { result, stdout } = invoked;
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
  return invoked;
}
