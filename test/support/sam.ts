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
 * An operation's sample invocation is its card's sample (test/cards/<operation>.ts): the generated
 * `events/<operation>.json` (scripts/sample-events.ts) rendered with the bench fixture's values,
 * against the fixture's items (test/bench/fixture.ts), written into the same table and put back
 * before each invocation; it must answer the card's `sample.status`, plus the card's `sam` checks.
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
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect } from 'vitest';
import { type AdminContext, recordDeliveredWebhookEvent } from '#scripts/admin/commands.ts';
import { type Moto, startMoto } from '#scripts/deploy/moto.ts';
import { lambdaNode } from '#scripts/lambda-node.ts';
import { fromLambdaResult } from '#scripts/local/apigw.ts';
import { ensureTable } from '#scripts/local/create-table.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '#scripts/local/dynamodb-local.ts';
import { policiesFromTemplate } from '#scripts/local/iam/policy.ts';
import { type IamProxy, startIamProxy } from '#scripts/local/iam/proxy.ts';
import { type DemoData, seedDemo } from '#scripts/local/seed.ts';
import { LOCAL_REGION, LOCAL_TABLE_NAME } from '#scripts/local/stack.ts';
import {
  createDeliveryQueue,
  ENV_VARS_FILE,
  EVENTS_DIR,
  renderTemplate,
  storeKeySet,
  writeRenderedEvents,
} from '#scripts/sam-events.ts';
import { fixtureVariables } from '#scripts/sample-events.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { operations, pipelineFunctions, scheduledFunctions } from '#shared/operations.ts';
import { fixture, fixtureItems, KEY_SET, WEBHOOK, WEBHOOK_EVENT } from '#test/bench/fixture.ts';
import { cardOf } from '#test/cards/index.ts';
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
/** Each operation's sample event (its generated event rendered with the fixture's values), by operation name. */
export let sampleEvents: Map<string, Json>;
/** The webhook key set the seed sealed secrets with; the bundles read it from Secrets Manager (moto). */
let keySet: string;
let fixtureEndpoint: string;

/** Puts the bench fixture's items back as they were (a sample before may have changed or deleted them). */
export async function restoreFixture(): Promise<void> {
  const doc = createDocumentClient({ endpoint: fixtureEndpoint });
  try {
    await Promise.all(
      fixtureItems().map((Item) => doc.send(new PutCommand({ TableName: LOCAL_TABLE_NAME, Item }))),
    );
  } finally {
    doc.destroy();
  }
}

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
    // The bench fixture's key set: the demo's endpoints and the fixture's one open with it.
    keySet = KEY_SET;
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
    fixtureEndpoint = endpoint;
    await restoreFixture();
    // The fixture's delivered webhook event (Redeliver's sample), which the bench's fake table only pretends.
    const doc = createDocumentClient({ endpoint });
    await recordDeliveredWebhookEvent(
      { table: { doc, name: LOCAL_TABLE_NAME } },
      { organizationId: fixture.organizationId, endpointId: WEBHOOK, id: WEBHOOK_EVENT },
    );
    doc.destroy();
    const variables = fixtureVariables();
    sampleEvents = new Map(
      operations.map((op) => {
        const file = join('events', `${op.name}.json`);
        const template = JSON.parse(readFileSync(join(EVENTS_DIR, `${op.name}.json`), 'utf8'));
        return [op.name, renderTemplate(template, variables, file)];
      }),
    );
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

/** Actions that change the table: a function granted none of them writes nothing. */
const WRITE_ACTIONS = new Set([
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
]);

/** Whether the function's grants let it write (the route table's `access`). */
export const writesTable = (op: (typeof operations)[number]): boolean =>
  op.access.some((grant) => grant.actions.some((action) => WRITE_ACTIONS.has(action)));

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
/**
 * The operation's card sample through its bundle, against the fixture put back first: the card's
 * status, an answer the document lists, the card's own `sam` checks, and one request line.
 */
export async function expectSampleInvocation(op: (typeof operations)[number]) {
  const name = op.name;
  const card = await cardOf(name);
  const event = sampleEvents.get(name);
  await restoreFixture();
  const invoked = await invokeBundle(functionIdOf(name), event);
  const { result, stdout } = invoked;
  const reply = replyOf(result);
  const status = card.sample.status;
  expect(reply.status, reply.text).toBe(status);
  expectDocumented(op.operationId, reply);
  if (status === 204) expect(reply.text).toBe('');
  card.sam?.check?.(reply, expect);
  // Its one request line: the log fields, and a valid embedded-metric-format document.
  const [line, ...more] = requestLines(stdout);
  expect(more).toEqual([]);
  const clientError = status >= 400 && status < 500;
  expect(line).toMatchObject({
    level: 'info',
    message: 'request',
    operation: name,
    route: event.routeKey,
    method: op.method,
    status,
    cold_start: true,
    request_id: event.requestContext.requestId,
    aws_request_id: LAMBDA_REQUEST_ID,
    Requests: 1,
    Errors4xx: clientError ? 1 : 0,
    Errors5xx: 0,
    ColdStarts: 1,
  });
  expect(line?.dynamodb.round_trips).toBeGreaterThan(0);
  expect(line?.DynamoDBRoundTrips).toBe(line?.dynamodb.round_trips);
  expect(line?.dynamodb.read_units).toBeGreaterThan(0);
  // A function granted no write consumed read units only; a writing one's success wrote (unless its
  // card says this sample changes nothing).
  if (!writesTable(op)) expect(line?.dynamodb.write_units).toBe(0);
  else if (status < 300 && card.sam?.writes !== false) expect(line?.dynamodb.write_units).toBeGreaterThan(0);
  expectEmf(line);
  return invoked;
}
