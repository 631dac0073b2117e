import { createRequire } from 'node:module';
import path from 'node:path';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import {
  type AddToPrincipalPolicyResult,
  Effect,
  PolicyDocument,
  PolicyStatement,
  Role,
  type RoleProps,
  ServicePrincipal,
} from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { leadingKeyPattern } from '../shared/data/table.ts';
import { TABLE_NAME_ENV, WEBHOOK_KEY_SET_ID_ENV } from '../shared/env.ts';
import type { TableGrant } from '../shared/operations.ts';

/** The AWS SDK's per-service endpoint override; SAM local sets it to DynamoDB Local (events/env.json). */
export const LOCAL_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_DYNAMODB';
/** The same for Secrets Manager: declared empty on the functions that read the webhook key set. */
export const LOCAL_SECRETS_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_SECRETS_MANAGER';

/** The same for SQS: declared empty on the webhook pipeline's functions, which use the delivery queue. */
export const LOCAL_SQS_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_SQS';

/** Replaces the SDK's default credential chain in the bundles (see `bundlingOptions`). */
export const ENV_CREDENTIALS_MODULE = 'infra/env-credentials.ts';

/**
 * How every function is bundled. Exported so the cold-start benchmark (test/bench/cold-start.ts)
 * builds exactly what the stack deploys: the two cannot drift.
 */
export const bundlingOptions = {
  minify: true,
  sourceMap: true,
  format: OutputFormat.ESM,
  target: 'node22',
  // Prefer the ESM builds of dependencies (the AWS SDK ships both) so tree shaking works.
  mainFields: ['module', 'main'],
  // Some bundled CommonJS still calls require(); ESM output has none unless we make one.
  banner: "import { createRequire } from 'module';const require = createRequire(import.meta.url);",
  // Bundled rather than taken from the runtime. Measured for list-wallets built both ways with
  // these options (esbuild, node22 target, NODE_OPTIONS=--enable-source-maps), `await import()`
  // of the bundle in a fresh Node process, 15 runs each, interleaved: bundled (397 kB) median
  // 114 ms (100-183), SDK external (56 kB, SDK resolved from node_modules as the runtime does)
  // median 285 ms (176-376). One minified file beats resolving and compiling the SDK's many
  // CommonJS files, and the SDK version stays the one pinned by our lock file.
  bundleAwsSDK: true,
  // Lambda passes the role's credentials in environment variables, the first place the SDK's default
  // chain looks; the rest of the chain (config files, SSO, web identity, container and instance
  // metadata, with the STS/SSO clients they embed) is replaced by that first step alone
  // (infra/env-credentials.ts): 135 kB less per bundle, ~25 ms less per cold start (test/bench).
  // Relative to the project root, where esbuild runs.
  esbuildArgs: { '--alias': `@aws-sdk/credential-provider-node=./${ENV_CREDENTIALS_MODULE}` },
  // Stack traces need only the mappings; the embedded sources tripled the map Node parses at
  // every cold start (--enable-source-maps): ~10 ms (test/bench).
  sourcesContent: false,
  // Local esbuild only (see assertLocalEsbuild): there is no Docker engine to fall back to.
  forceDockerBundling: false,
} satisfies BundlingOptions;

/** Pascal-cased construct id from a function name, so logical ids stay readable (`CreateClient/Function`). */
export const constructId = (name: string) =>
  name.replace(/(^|-)(\w)/g, (_, __, c: string) => c.toUpperCase());

/** The functions' NODE_OPTIONS; the cold-start benchmark runs its bundles with the same. */
export const functionNodeOptions = '--enable-source-maps';

/**
 * The webhook key set by name: the functions find it by its name, and their grant names its ARN with
 * the six characters Secrets Manager appends to every secret's name (`<name>-??????`), so that no
 * other secret whose name starts the same matches.
 */
export interface WebhookKeySetRef {
  readonly name: string;
  readonly arnPattern: string;
  /** The customer-managed KMS key Secrets Manager seals the key set with. */
  readonly keyArn: string;
}

/** The parts of `shared/operations.ts` a function needs; readonly so the `as const` table fits. */
export interface FunctionOperation {
  readonly name: string;
  readonly entry: string;
  /** Table grants; none: the function gets no table access and no table name. */
  readonly access: readonly TableGrant[];
  /** The function seals or opens webhook signing secrets (`shared/operations.ts`). */
  readonly webhookKeySet?: true;
}

export interface ApiFunctionProps {
  readonly operation: FunctionOperation;
  readonly table: ITable;
  /** Repository root: `operation.entry`, the lock file and tsconfig are resolved from here. */
  readonly projectRoot: string;
  readonly production: boolean;
  /** X-Ray active tracing (`-c tracing:<stage>=false` turns it off). */
  readonly tracing?: boolean;
  /** Settings of the stack the function reads from its environment. */
  readonly environment?: Readonly<Record<string, string>>;
  /** Files (absolute paths) shipped beside the bundle, read by the function at run time. */
  readonly files?: readonly string[];
  /** The webhook key set; granted (GetSecretValue on it alone) only to `webhookKeySet` operations. */
  readonly webhookKeySet?: WebhookKeySetRef;
  /** Default 10 s (an API request); the pipeline's functions take longer batches. */
  readonly timeout?: Duration;
}

/**
 * Every operation's Lambda, configured once so functions cannot drift apart.
 *
 * The role is built here rather than by NodejsFunction because the default one
 * carries AWSLambdaBasicExecutionRole (`logs:*` on every log group); with an
 * explicit log group, write access to that group is all the function needs.
 */
export class ApiFunction extends Construct {
  readonly function: NodejsFunction;
  readonly logGroup: LogGroup;
  readonly role: Role;

  constructor(scope: Construct, id: string, props: ApiFunctionProps) {
    super(scope, id);
    const { operation, table, projectRoot, production } = props;
    assertLocalEsbuild(projectRoot);

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: production ? RetentionDays.ONE_MONTH : RetentionDays.ONE_WEEK,
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });

    const usesTable = operation.access.length > 0;
    this.role = new InlinePolicyRole(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: usesTable
        ? `${operation.name}: its own log group and ${operation.access.length} table grants`
        : `${operation.name}: its own log group only`,
    });
    this.logGroup.grantWrite(this.role);
    for (const grant of operation.access) this.role.addToPolicy(tableGrantStatement(table, grant));
    const keySet = operation.webhookKeySet ? props.webhookKeySet : undefined;
    if (operation.webhookKeySet && !keySet) throw new Error(`${operation.name} needs the webhook key set`);
    if (keySet) {
      // Read once per container, when a secret is first sealed or opened; nothing else on the secret.
      this.role.addToPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['secretsmanager:GetSecretValue'],
          resources: [keySet.arnPattern],
        }),
      );
      // Secrets Manager decrypts the value with the caller's own permission on the key: Decrypt
      // only, and only through Secrets Manager. No function writes the key set, so none may
      // encrypt or generate data keys with it.
      this.role.addToPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['kms:Decrypt'],
          resources: [keySet.keyArn],
          conditions: {
            StringEquals: { 'kms:ViaService': `secretsmanager.${Stack.of(this).region}.amazonaws.com` },
          },
        }),
      );
    }

    this.function = new NodejsFunction(this, 'Function', {
      entry: path.join(projectRoot, operation.entry),
      handler: 'handler',
      projectRoot,
      depsLockFilePath: path.join(projectRoot, 'package-lock.json'),
      // The runtime the team standardised on (see AwsSolutions-L1 below), pinned rather than
      // NODEJS_LATEST so a CDK upgrade cannot change the runtime behind our back.
      runtime: Runtime.NODEJS_22_X,
      // Graviton: cheaper per GB-second and at least as fast for this I/O-bound code.
      architecture: Architecture.ARM_64,
      memorySize: 512,
      // API Gateway gives up after 30 s; a request still running at 10 s is stuck, not slow.
      timeout: props.timeout ?? Duration.seconds(10),
      role: this.role,
      logGroup: this.logGroup,
      // Lambda records the invocation; shared/observability/xray.ts adds a subsegment per DynamoDB call.
      tracing: props.tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      environment: {
        ...props.environment,
        NODE_OPTIONS: functionNodeOptions,
        ...(usesTable && {
          [TABLE_NAME_ENV]: table.tableName,
          // Empty, so inert on AWS: the SDK ignores an empty endpoint variable and uses the regional
          // endpoint. It is declared only because `sam local invoke --env-vars` can override a
          // variable but never add one, and SAM points the functions at DynamoDB Local through it.
          [LOCAL_ENDPOINT_ENV]: '',
        }),
        ...(keySet && {
          [WEBHOOK_KEY_SET_ID_ENV]: keySet.name,
          // Inert on AWS, as the DynamoDB one: lets `sam local` point the function at a local store.
          [LOCAL_SECRETS_ENDPOINT_ENV]: '',
        }),
      },
      bundling: props.files?.length
        ? {
            ...bundlingOptions,
            commandHooks: {
              beforeBundling: () => [],
              beforeInstall: () => [],
              afterBundling: (_inputDir: string, outputDir: string) =>
                (props.files ?? []).map((file) => `cp ${shellQuote(file)} ${shellQuote(outputDir)}`),
            },
          }
        : bundlingOptions,
    });
    if (props.tracing) {
      // Lambda's active tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords to the role.
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no ' +
          'resource-level permissions, so AWS requires Resource "*" for them; nothing else is granted on "*".',
      });
    }
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Pinned to nodejs22.x on purpose: the supported, team-wide runtime that development and CI ' +
        'also target (the code runs unchanged on Node 20 and 22). Moving to a newer runtime is a ' +
        'deliberate, tested change, not something a lint rule should make on its own.',
    });
  }
}

/**
 * A role whose every grant (the table's, the log group's, X-Ray's, an event source's, the KMS keys')
 * goes into one inline policy, written in the role itself, rather than into CDK's `DefaultPolicy`, an
 * `AWS::IAM::Policy` resource of its own. Same statements, one resource fewer per function: a
 * function's resources are what fills the stack's 500 (docs/deploying.md, "Resources per stack").
 * An inline policy also exists as soon as the role does, so no function is created before its grants.
 * IAM caps a role's inline policies at 10,240 characters; `test/infra/stack.test.ts` checks the margin.
 */
export class InlinePolicyRole extends Role {
  readonly document: PolicyDocument;

  constructor(scope: Construct, id: string, props: Omit<RoleProps, 'inlinePolicies'>) {
    const document = new PolicyDocument();
    super(scope, id, { ...props, inlinePolicies: { [INLINE_POLICY_NAME]: document } });
    this.document = document;
  }

  override addToPrincipalPolicy(statement: PolicyStatement): AddToPrincipalPolicyResult {
    this.document.addStatements(statement);
    return { statementAdded: true, policyDependable: this };
  }
}

/** The name of each function role's one inline policy. */
export const INLINE_POLICY_NAME = 'grants';

/**
 * One grant of the operation: exactly its actions, on the table or only on the indexes it names,
 * and only for items whose partition key starts with one of its prefixes.
 */
function tableGrantStatement(table: ITable, grant: TableGrant): PolicyStatement {
  return new PolicyStatement({
    effect: Effect.ALLOW,
    actions: [...grant.actions],
    resources: grant.indexes
      ? grant.indexes.map((index) => `${table.tableArn}/index/${index}`)
      : [table.tableArn],
    conditions: {
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': grant.leadingKeys.map(leadingKeyPattern) },
    },
  });
}

const shellQuote = (value: string): string => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * NodejsFunction silently switches to Docker bundling when it cannot find esbuild;
 * without a Docker engine that surfaces as an obscure `docker` spawn error mid-synth.
 */
function assertLocalEsbuild(projectRoot: string): void {
  try {
    createRequire(path.join(projectRoot, 'package.json')).resolve('esbuild/package.json');
  } catch {
    throw new Error(
      `esbuild is not installed under ${projectRoot}; run \`npm ci\` (Docker bundling is not supported)`,
    );
  }
}
