/**
 * `npm run deploy:rehearse [-- --stage NAME ... --region REGION --verbose]`: the real deployment
 * commands, `cdk bootstrap`, `cdk deploy`, `cdk destroy` with the project's pinned CLI, against moto
 * on a loopback port instead of AWS. Default: a preview stage (`rehearsal`) and prod, in eu-west-3
 * (`REHEARSAL_REGION`), not us-east-1: the template must deploy anywhere.
 *
 * It shows that the bootstrap stack deploys, that the assets publish to the bootstrap bucket of the
 * chosen region, that CloudFormation accepts the template and creates every resource moto models,
 * that the table comes out as the template declares it, and that destroy removes (or, by policy,
 * keeps) what it should. It says plainly what moto does not model: the HTTP API (API Gateway v2),
 * alarms, and some table properties, found by asking moto, not from a list kept here.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  GetTemplateCommand,
  ListStackResourcesCommand,
  ListStacksCommand,
  type Stack,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { PRODUCTION_STAGE } from '../infra/stack.ts';
import { type CliRun, cdk } from './deploy/cdk-cli.ts';
import { MOTO_ACCOUNT, type Moto, startMoto } from './deploy/moto.ts';
import {
  type Check,
  formatTable,
  type MotoTableSupport,
  type ResourceReport,
  resourceReport,
  type Template,
  tableChecks,
  unsupportedTypes,
} from './deploy/rehearsal-report.ts';

// The SDK's notice that its releases from 2027 need Node 22: true of the whole repository, not news here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values: options } = parseArgs({
  options: {
    stage: { type: 'string', multiple: true, default: ['rehearsal', PRODUCTION_STAGE] },
    // Not us-east-1 on purpose: a template that assumed it would fail here.
    region: { type: 'string', default: process.env.REHEARSAL_REGION ?? 'eu-west-3' },
    verbose: { type: 'boolean', default: false },
  },
});
const region = options.region;

interface StageResult {
  stack: string;
  status: string;
  resources?: ResourceReport;
  checks: Check[];
  afterDestroy: string;
  failures: string[];
}

const say = (line = '') => console.log(line);
const indent = (lines: string[]) => lines.map((line) => `  ${line}`).join('\n');

/** The environment of every CLI call: moto's endpoint and throwaway credentials, nothing of the caller's AWS setup. */
function rehearsalEnvironment(moto: Moto, work: string): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(
    ([name]) => !name.startsWith('AWS_') && !name.startsWith('CDK_DEFAULT_'),
  );
  return {
    ...Object.fromEntries(kept),
    AWS_ENDPOINT_URL: moto.endpoint,
    // CloudFormation is handed the template's S3 URL; moto resolves it only under this host name.
    AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION: `http://localhost:${moto.port}`,
    AWS_ACCESS_KEY_ID: 'rehearsal',
    AWS_SECRET_ACCESS_KEY: 'rehearsal',
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_CONFIG_FILE: join(work, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(work, 'no-aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
  };
}

async function step(label: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  process.stdout.write(`${label} … `);
  try {
    const run = await cdk(args, env, options.verbose);
    say(`ok (${run.seconds.toFixed(0)} s)`);
    return run;
  } catch (error) {
    say('FAILED');
    const { run } = error as { run?: CliRun };
    if (run && !options.verbose) say(indent(run.output.trimEnd().split('\n')));
    throw error;
  }
}

async function listResources(cf: CloudFormationClient, stack: string): Promise<StackResourceSummary[]> {
  const summaries: StackResourceSummary[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cf.send(new ListStackResourcesCommand({ StackName: stack, NextToken }));
    summaries.push(...(page.StackResourceSummaries ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return summaries;
}

/**
 * Deploys a one-table stack declaring TTL and point-in-time recovery straight through moto's
 * CloudFormation and reads back which of them moto applied: a control, so a property moto ignores
 * is reported as such rather than as a defect of our stack (or silently passed).
 */
async function probeTableSupport(cf: CloudFormationClient, ddb: DynamoDBClient): Promise<MotoTableSupport> {
  const StackName = 'RehearsalMotoProbe';
  await cf.send(
    new CreateStackCommand({
      StackName,
      TemplateBody: JSON.stringify({
        Resources: {
          Probe: {
            Type: 'AWS::DynamoDB::Table',
            Properties: {
              AttributeDefinitions: [{ AttributeName: 'k', AttributeType: 'S' }],
              KeySchema: [{ AttributeName: 'k', KeyType: 'HASH' }],
              BillingMode: 'PAY_PER_REQUEST',
              TimeToLiveSpecification: { AttributeName: 'expires', Enabled: true },
              PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
            },
          },
        },
      }),
    }),
  );
  try {
    const [probe] = await listResources(cf, StackName);
    const TableName = probe?.PhysicalResourceId;
    if (!TableName) throw new Error('moto created no probe table');
    const ttl = await ddb.send(new DescribeTimeToLiveCommand({ TableName }));
    const backups = await ddb.send(new DescribeContinuousBackupsCommand({ TableName }));
    return {
      timeToLive: ttl.TimeToLiveDescription?.TimeToLiveStatus === 'ENABLED',
      pointInTimeRecovery:
        backups.ContinuousBackupsDescription?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus ===
        'ENABLED',
    };
  } finally {
    await cf.send(new DeleteStackCommand({ StackName }));
  }
}

async function describeStack(cf: CloudFormationClient, stack: string): Promise<Stack | undefined> {
  const { Stacks } = await cf.send(new DescribeStacksCommand({ StackName: stack }));
  return Stacks?.[0];
}

/** The latest stack of that name, deleted ones included (DescribeStacks forgets them by name). */
async function latestStatus(cf: CloudFormationClient, stack: string): Promise<string> {
  const { StackSummaries = [] } = await cf.send(new ListStacksCommand({}));
  const mine = StackSummaries.filter((summary) => summary.StackName === stack).sort(
    (a, b) => (b.CreationTime?.getTime() ?? 0) - (a.CreationTime?.getTime() ?? 0),
  );
  return mine[0]?.StackStatus ?? 'absent';
}

async function tableExists(ddb: DynamoDBClient, TableName: string): Promise<boolean> {
  try {
    await ddb.send(new DescribeTableCommand({ TableName }));
    return true;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return false;
    throw error;
  }
}

function printResources(report: ResourceReport, template: Template, outputs: Stack['Outputs']): void {
  say();
  say(
    indent(
      formatTable(
        ['resource type', 'declared', 'created', 'not modelled by moto', 'note'],
        report.rows.map((row) => [
          row.type,
          String(row.declared),
          String(row.created),
          row.notModelled ? String(row.notModelled) : '',
          [
            row.missing ? `${row.missing} MISSING` : '',
            row.referToSkipped
              ? `${row.referToSkipped} refer to ${row.skippedTargets.join(', ')}, which moto did not create`
              : '',
          ]
            .filter(Boolean)
            .join('; '),
        ]),
      ),
    ),
  );
  const total = (key: 'declared' | 'created' | 'notModelled') =>
    report.rows.reduce((sum, row) => sum + row[key], 0);
  say(
    `  total: ${total('declared')} declared, ${total('created')} created, ${total('notModelled')} not modelled by moto`,
  );
  if (report.notModelled.length > 0) {
    const types = [...new Set(report.notModelled.map((id) => template.Resources[id]?.Type))].join(', ');
    say(`  not modelled by moto: ${types}`);
    say(
      `    moto logged "No Moto CloudFormation support for" each of these types, skipped their ` +
        `${report.notModelled.length} resources,`,
    );
    say(
      `    reported the stack complete anyway, and lists ${report.anonymousEntries} resources without id or type.`,
    );
    const skipped = new Set(report.notModelled.map((id) => template.Resources[id]?.Type ?? ''));
    const what = [
      [...skipped].some((type) => type.startsWith('AWS::ApiGatewayV2::'))
        ? 'the HTTP API (routes, integrations, stage, CORS, throttling)'
        : '',
      skipped.has('AWS::CloudWatch::Alarm') ? 'the alarms' : '',
    ].filter(Boolean);
    if (what.length > 0) {
      say(`    Not rehearsed, then: ${what.join(' and ')};`);
      say('    the first real deployment proves them (docs/deploying.md, "First real deployment").');
    }
  }
  const declared = Object.keys(template.Outputs ?? {});
  const returned = (outputs ?? []).map((output) => `${output.OutputKey}=${output.OutputValue}`);
  say(
    `  outputs: declared ${declared.join(', ') || 'none'}; moto returned ${returned.join(', ') || 'none (its change-set deployments do not evaluate outputs)'}`,
  );
}

function printChecks(tableName: string, checks: Check[]): void {
  say();
  say(`  table ${tableName}: DescribeTable, DescribeTimeToLive, DescribeContinuousBackups vs the template`);
  const shown = (check: Check) => {
    if (check.status === 'ok') return check.expected;
    const deployed = `declared ${check.expected}, deployed ${check.actual}`;
    return check.status === 'mismatch' ? `WRONG: ${deployed}` : `${deployed}: not modelled by moto`;
  };
  const mark = { ok: '✔', mismatch: '✘', 'not modelled': '–' } as const;
  say(indent(checks.map((check) => `${mark[check.status]} ${check.name.padEnd(34)} ${shown(check)}`)));
}

async function rehearseStage(
  stage: string,
  env: NodeJS.ProcessEnv,
  work: string,
  clients: { cf: CloudFormationClient; ddb: DynamoDBClient },
  moto: Moto,
  support: MotoTableSupport,
): Promise<StageResult> {
  const { cf, ddb } = clients;
  const stack = `CommerceApi-${stage}`;
  const out = join(work, `cdk.out-${stage}`);
  // moto 5.2 fails to create a KMS key with Tags: the rehearsed keys go untagged (infra/stack.ts).
  const context = ['-c', `stage=${stage}`, '-c', 'tagKmsKeys=false', '--output', out];
  const result: StageResult = { stack, status: 'not deployed', checks: [], afterDestroy: '', failures: [] };
  say();
  say(`== ${stack} (${stage === PRODUCTION_STAGE ? 'production stage' : 'preview stage'}) ==`);

  try {
    await step('cdk deploy', ['deploy', stack, ...context, '--require-approval', 'never'], env);
  } catch (error) {
    result.failures.push(`cdk deploy: ${(error as Error).message}`);
    return result;
  }
  // What the stack declares, as CloudFormation received it.
  const { TemplateBody } = await cf.send(new GetTemplateCommand({ StackName: stack }));
  const template: Template = JSON.parse(TemplateBody ?? '{"Resources":{}}');
  const described = await describeStack(cf, stack);
  result.status = described?.StackStatus ?? 'absent';
  say(`stack status: ${result.status}  ${described?.StackId ?? ''}`);
  if (result.status !== 'CREATE_COMPLETE') result.failures.push(`stack is ${result.status}`);
  if (!described?.StackId?.includes(`:${region}:${MOTO_ACCOUNT}:`)) {
    result.failures.push(`stack id ${described?.StackId} is not in ${region}/${MOTO_ACCOUNT}`);
  }

  const summaries = await listResources(cf, stack);
  result.resources = resourceReport(template, summaries, unsupportedTypes(moto.log()));
  result.failures.push(...result.resources.failures);
  printResources(result.resources, template, described?.Outputs);

  const [tableId, tableResource] =
    Object.entries(template.Resources).find(([, resource]) => resource.Type === 'AWS::DynamoDB::Table') ?? [];
  const tableName = summaries.find((s) => s.LogicalResourceId === tableId)?.PhysicalResourceId;
  if (!tableResource || !tableName) {
    result.failures.push('no table was created');
  } else {
    const { Table: table = {} } = await ddb.send(new DescribeTableCommand({ TableName: tableName }));
    const { TimeToLiveDescription: timeToLive } = await ddb.send(
      new DescribeTimeToLiveCommand({ TableName: tableName }),
    );
    const { ContinuousBackupsDescription: backups } = await ddb.send(
      new DescribeContinuousBackupsCommand({ TableName: tableName }),
    );
    result.checks = tableChecks(tableResource.Properties ?? {}, { table, timeToLive, backups }, support);
    printChecks(tableName, result.checks);
    for (const check of result.checks.filter((c) => c.status === 'mismatch')) {
      result.failures.push(
        `table ${check.name.trim()}: declared ${check.expected}, deployed ${check.actual}`,
      );
    }
  }

  say();
  try {
    await step('cdk destroy', ['destroy', stack, ...context, '--force'], env);
  } catch (error) {
    result.failures.push(`cdk destroy: ${(error as Error).message}`);
    return result;
  }
  const deleted = await latestStatus(cf, stack);
  if (deleted !== 'DELETE_COMPLETE') result.failures.push(`after destroy the stack is ${deleted}`);
  const notes = [`stack ${deleted}`];
  if (tableName) {
    const retain = tableResource?.DeletionPolicy === 'Retain';
    const exists = await tableExists(ddb, tableName);
    notes.push(`table ${exists ? 'kept' : 'deleted'} (${tableResource?.DeletionPolicy ?? 'Delete'})`);
    if (exists !== retain) result.failures.push(`after destroy the table was ${exists ? 'kept' : 'deleted'}`);
  }
  result.afterDestroy = notes.join(', ');
  say(`after destroy: ${result.afterDestroy}`);
  const retained = new Map<string, number>();
  for (const resource of Object.values(template.Resources)) {
    if (resource.DeletionPolicy === 'Retain')
      retained.set(resource.Type, (retained.get(resource.Type) ?? 0) + 1);
  }
  if (retained.size > 0) {
    const kept = [...retained].map(([type, count]) => `${count} ${type}`).join(', ');
    say(`  left in place by DeletionPolicy Retain, as on AWS: ${kept}`);
  }
  return result;
}

async function main(): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'commerce-rehearsal-'));
  const logFile = join(work, 'moto.log');
  writeFileSync(logFile, '');
  let moto: Moto | undefined;
  const stopOnSignal = (signal: NodeJS.Signals) => {
    say(`\n${signal}: stopping moto`);
    void (moto?.stop() ?? Promise.resolve()).finally(() => {
      rmSync(work, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);

  const results: StageResult[] = [];
  const failures: string[] = [];
  try {
    moto = await startMoto(logFile);
    say(
      `Deploy rehearsal on moto ${moto.version} at ${moto.endpoint}: account ${MOTO_ACCOUNT}, region ${region}`,
    );
    say(
      '(the cdk CLI from node_modules; AWS_ENDPOINT_URL points every AWS call at moto, with throwaway credentials)',
    );
    say();
    const env = rehearsalEnvironment(moto, work);
    const clientConfig = {
      region,
      endpoint: moto.endpoint,
      credentials: { accessKeyId: 'rehearsal', secretAccessKey: 'rehearsal' },
    };
    const clients = { cf: new CloudFormationClient(clientConfig), ddb: new DynamoDBClient(clientConfig) };

    await step(
      `cdk bootstrap aws://${MOTO_ACCOUNT}/${region}`,
      ['bootstrap', `aws://${MOTO_ACCOUNT}/${region}`],
      env,
    );
    const bootstrap = await describeStack(clients.cf, 'CDKToolkit');
    say(`bootstrap stack CDKToolkit: ${bootstrap?.StackStatus}`);
    const support = await probeTableSupport(clients.cf, clients.ddb);
    const ignored = [
      support.timeToLive ? '' : 'TimeToLiveSpecification',
      support.pointInTimeRecovery ? '' : 'PointInTimeRecoverySpecification',
    ].filter(Boolean);
    say(
      `moto probe: a one-table stack declaring TTL and point-in-time recovery comes out with ${
        ignored.length ? `${ignored.join(' and ')} not applied: moto does not model them` : 'both applied'
      }`,
    );

    for (const stage of options.stage) {
      results.push(await rehearseStage(stage, env, work, clients, moto, support));
    }
  } catch (error) {
    // A failed step has printed its output; what follows still stops moto and sums up.
    failures.push((error as Error).message);
  } finally {
    await moto?.stop();
  }

  say();
  say('== Summary ==');
  say(
    indent(
      formatTable(
        ['stack', 'status', 'created / declared', 'not modelled by moto', 'table checks', 'after destroy'],
        results.map((result) => {
          const rows = result.resources?.rows ?? [];
          const sum = (key: 'declared' | 'created' | 'notModelled') =>
            rows.reduce((n, row) => n + row[key], 0);
          const count = (status: Check['status']) => result.checks.filter((c) => c.status === status).length;
          return [
            result.stack,
            result.status,
            `${sum('created')} / ${sum('declared')}`,
            String(sum('notModelled')),
            `${count('ok')} ok, ${count('mismatch')} wrong, ${count('not modelled')} not modelled`,
            result.afterDestroy,
          ];
        }),
      ),
    ),
  );
  say('moto stopped.');
  failures.unshift(
    ...results.flatMap((result) => result.failures.map((failure) => `${result.stack}: ${failure}`)),
  );
  if (failures.length > 0) {
    say(`\nRehearsal FAILED (moto's log and the cloud assemblies are kept in ${work}):`);
    say(indent(failures));
    return 1;
  }
  rmSync(work, { recursive: true, force: true });
  say(
    '\nRehearsal passed: every resource moto models was created as declared and destroyed as its policy says.',
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`\nRehearsal FAILED: ${error.stack ?? error.message}`);
    process.exit(1);
  },
);
