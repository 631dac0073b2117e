/**
 * `npm run deploy:rehearse`: the deployment path, end to end, against moto (an AWS emulator on
 * loopback; `moto_server` is installed on our machines): `cdk bootstrap`, `cdk deploy` of a preview
 * stage, checks of what was deployed, `cdk destroy`. No AWS account, no network beyond loopback.
 *
 * What it proves: the bootstrap stack, asset publishing to S3, the CloudFormation template as the
 * CLI submits it (in a region other than us-east-1, which the template must not assume), and what
 * moto models of it: IAM roles and policies, Lambda functions and permissions, log groups, and the
 * DynamoDB table with the keys, indexes and TTL the stack declares. What it cannot: moto's
 * CloudFormation does not create API Gateway v2 resources or CloudWatch alarms; it lists them with
 * no type and nothing behind them. The report names them, so nobody mistakes a green rehearsal
 * for a tested API Gateway. The first real deployment's checklist is in the README.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  GetTemplateCommand,
  paginateListStackResources,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { freePort } from './local/dynamodb-local.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CDK = join(ROOT, 'node_modules', '.bin', 'cdk');
const STAGE = 'rehearsal';
const STACK = `CommerceApi-${STAGE}`;
/** Not us-east-1 on purpose: a template that assumed it would fail here. */
const REGION = process.env.REHEARSAL_REGION ?? 'eu-west-3';
const ACCOUNT = '123456789012';
const run = promisify(execFile);

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation template JSON is untyped.
type Json = any;

interface Check {
  what: string;
  ok: boolean;
  detail?: string;
}

async function startMoto(port: number): Promise<ChildProcess> {
  const moto = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const failed = new Promise<never>((_, reject) => {
    moto.once('error', (error) =>
      reject(new Error(`moto_server could not start (${error.message}): is moto installed?`)),
    );
    moto.once('exit', (code) => reject(new Error(`moto_server exited with ${code}`)));
  });
  failed.catch(() => {});
  for (let i = 0; i < 100; i++) {
    const up = await Promise.race([
      fetch(`http://127.0.0.1:${port}/moto-api/`).then(
        () => true,
        () => false,
      ),
      failed,
    ]);
    if (up) return moto;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  moto.kill();
  throw new Error('moto_server did not answer within 10 s');
}

async function cdk(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  try {
    await run(CDK, args, { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024, timeout: 600_000 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`cdk ${args[0]} failed:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}

const byType = (types: string[]) =>
  [...types.reduce((count, type) => count.set(type, (count.get(type) ?? 0) + 1), new Map<string, number>())]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([type, n]) => `${n} × ${type}`);

const sortedNames = (items: { IndexName?: string }[] | undefined) =>
  (items ?? []).map((index) => index.IndexName).sort();

const keysOf = (schema: { AttributeName?: string; KeyType?: string }[] | undefined) =>
  (schema ?? []).map((key) => `${key.KeyType}:${key.AttributeName}`).join(' ');

/** The deployed table against the table resource of the template the CLI submitted. */
function tableChecks(declared: Json, table: TableDescription): Check[] {
  const indexKeys = (list: Json[] | undefined) =>
    Object.fromEntries((list ?? []).map((index: Json) => [index.IndexName, keysOf(index.KeySchema)]));
  const deployedIndexKeys = (list: { IndexName?: string; KeySchema?: Json[] }[] | undefined) =>
    Object.fromEntries((list ?? []).map((index) => [index.IndexName, keysOf(index.KeySchema)]));
  const same = (what: string, want: unknown, got: unknown): Check => ({
    what,
    ok: JSON.stringify(want) === JSON.stringify(got),
    detail: `declared ${JSON.stringify(want)}, deployed ${JSON.stringify(got)}`,
  });
  return [
    same('table key schema', keysOf(declared.KeySchema), keysOf(table.KeySchema)),
    same('billing mode', declared.BillingMode, table.BillingModeSummary?.BillingMode),
    same(
      'global secondary indexes',
      sortedNames(declared.GlobalSecondaryIndexes),
      sortedNames(table.GlobalSecondaryIndexes),
    ),
    same(
      'GSI keys',
      indexKeys(declared.GlobalSecondaryIndexes),
      deployedIndexKeys(table.GlobalSecondaryIndexes),
    ),
    same(
      'local secondary indexes',
      sortedNames(declared.LocalSecondaryIndexes),
      sortedNames(table.LocalSecondaryIndexes),
    ),
    same(
      'LSI keys',
      indexKeys(declared.LocalSecondaryIndexes),
      deployedIndexKeys(table.LocalSecondaryIndexes),
    ),
  ];
}

/**
 * Whether moto's CloudFormation applies a table's `TimeToLiveSpecification` at all: a one-table
 * probe stack says. (moto 5.2 does not; its DynamoDB API does.) So a TTL missing on our table is
 * moto's gap, not the template's, only when the probe shows the same.
 */
async function motoAppliesTtl(cfn: CloudFormationClient, ddb: DynamoDBClient): Promise<boolean> {
  const name = `ttl-probe-${Date.now()}`;
  await cfn.send(
    new CreateStackCommand({
      StackName: name,
      TemplateBody: JSON.stringify({
        Resources: {
          Probe: {
            Type: 'AWS::DynamoDB::Table',
            Properties: {
              TableName: name,
              BillingMode: 'PAY_PER_REQUEST',
              AttributeDefinitions: [{ AttributeName: 'PK', AttributeType: 'S' }],
              KeySchema: [{ AttributeName: 'PK', KeyType: 'HASH' }],
              TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
            },
          },
        },
      }),
    }),
  );
  const status = (await ddb.send(new DescribeTimeToLiveCommand({ TableName: name }))).TimeToLiveDescription;
  await cfn.send(new DeleteStackCommand({ StackName: name }));
  return status?.TimeToLiveStatus === 'ENABLED';
}

async function rehearse(): Promise<boolean> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const outdir = mkdtempSync(join(tmpdir(), 'commerce-rehearsal-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AWS_ACCESS_KEY_ID: 'rehearsal',
    AWS_SECRET_ACCESS_KEY: 'rehearsal',
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ENDPOINT_URL: endpoint,
    // CloudFormation (inside moto) fetches the template from S3 by this address.
    AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION: `http://localhost:${port}`,
    CDK_DISABLE_VERSION_CHECK: '1',
  };
  for (const name of ['AWS_PROFILE', 'AWS_SESSION_TOKEN']) delete env[name];
  const aws = {
    endpoint,
    region: REGION,
    credentials: { accessKeyId: 'rehearsal', secretAccessKey: 'rehearsal' },
  };
  const cfn = new CloudFormationClient(aws);
  const ddb = new DynamoDBClient(aws);
  console.log(`moto on ${endpoint}, region ${REGION}, stack ${STACK}`);
  const moto = await startMoto(port);
  const checks: Check[] = [];
  /** What this rehearsal could not check because moto does not model it. */
  const limits: string[] = [];
  try {
    await cdk(['bootstrap', `aws://${ACCOUNT}/${REGION}`, '-o', outdir], env);
    console.log('✔ cdk bootstrap');
    await cdk(['deploy', STACK, '-c', `stage=${STAGE}`, '--require-approval', 'never', '-o', outdir], env);
    console.log('✔ cdk deploy');

    const stack = (await cfn.send(new DescribeStacksCommand({ StackName: STACK }))).Stacks?.[0];
    checks.push({
      what: 'stack status',
      ok: stack?.StackStatus === 'CREATE_COMPLETE',
      detail: stack?.StackStatus,
    });
    const template: Json = JSON.parse(
      (await cfn.send(new GetTemplateCommand({ StackName: STACK }))).TemplateBody ?? '{}',
    );
    const resources: StackResourceSummary[] = [];
    for await (const page of paginateListStackResources({ client: cfn }, { StackName: STACK })) {
      resources.push(...(page.StackResourceSummaries ?? []));
    }
    const declared = Object.entries(template.Resources as Record<string, { Type: string; Properties: Json }>);
    const deployed = new Map(resources.map((resource) => [resource.LogicalResourceId, resource]));
    const created = declared.filter(([id]) => {
      const resource = deployed.get(id);
      return resource?.ResourceType && resource.ResourceStatus === 'CREATE_COMPLETE';
    });
    const notModelled = declared.filter(([id]) => !created.some(([createdId]) => createdId === id));
    console.log(`\nResources created (${created.length} of ${declared.length}):`);
    for (const line of byType(created.map(([, resource]) => resource.Type))) console.log(`  ${line}`);
    console.log(`\nNot created: moto's CloudFormation does not model these (${notModelled.length}):`);
    for (const line of byType(notModelled.map(([, resource]) => resource.Type))) console.log(`  ${line}`);
    const unexpected = notModelled.filter(
      ([, resource]) => !/^AWS::(ApiGatewayV2|CloudWatch)::/.test(resource.Type),
    );
    checks.push({
      what: 'everything but API Gateway v2 and CloudWatch alarms created',
      ok: unexpected.length === 0,
      detail: unexpected.map(([id, resource]) => `${id} (${resource.Type})`).join(', ') || 'yes',
    });

    const [tableId, tableResource] =
      declared.find(([, resource]) => resource.Type === 'AWS::DynamoDB::Table') ?? [];
    const tableName = deployed.get(tableId)?.PhysicalResourceId;
    const table = (await ddb.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    const ttl = (await ddb.send(new DescribeTimeToLiveCommand({ TableName: tableName })))
      .TimeToLiveDescription;
    if (!table || !tableResource) throw new Error('the table was not deployed');
    checks.push(...tableChecks(tableResource.Properties, table));
    const declaredTtl = tableResource.Properties.TimeToLiveSpecification;
    checks.push({
      what: 'TTL declared in the template',
      ok: declaredTtl?.Enabled === true && typeof declaredTtl.AttributeName === 'string',
      detail: declaredTtl?.AttributeName,
    });
    if (ttl?.TimeToLiveStatus === 'ENABLED') {
      checks.push({
        what: 'TTL enabled as deployed',
        ok: ttl.AttributeName === declaredTtl?.AttributeName,
        detail: ttl.AttributeName,
      });
    } else if (await motoAppliesTtl(cfn, ddb)) {
      checks.push({ what: 'TTL enabled as deployed', ok: false, detail: ttl?.TimeToLiveStatus });
    } else {
      limits.push(
        "the table's TTL: moto's CloudFormation ignores TimeToLiveSpecification (a probe stack shows the same)",
      );
    }

    await cdk(['destroy', STACK, '-c', `stage=${STAGE}`, '--force', '-o', outdir], env);
    console.log('\n✔ cdk destroy');
    const gone = await ddb.send(new DescribeTableCommand({ TableName: tableName })).then(
      () => false,
      (error: Error) => error.name === 'ResourceNotFoundException',
    );
    checks.push({ what: 'preview table removed with its stack', ok: gone });
  } finally {
    moto.kill();
    cfn.destroy();
    ddb.destroy();
    rmSync(outdir, { recursive: true, force: true });
  }
  console.log('\nChecks:');
  for (const check of checks)
    console.log(`  ${check.ok ? '✔' : '✘'} ${check.what}${check.detail ? `: ${check.detail}` : ''}`);
  console.log(
    '\nNot rehearsed, moto does not model it; confirm on the first real deployment (README, Deploying):',
  );
  for (const limit of [
    'the HTTP API: its routes, the $default route, CORS, stage throttling and access logs',
    'the CloudWatch alarms (prod only)',
    ...limits,
  ]) {
    console.log(`  - ${limit}`);
  }
  return checks.every((check) => check.ok);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  rehearse().then(
    (ok) => process.exit(ok ? 0 : 1),
    (error: Error) => {
      console.error(`deploy rehearsal failed: ${error.message}`);
      process.exit(1);
    },
  );
}
