import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Annotations,
  type App,
  ArnFormat,
  CfnOutput,
  Duration,
  type Environment,
  RemovalPolicy,
  Stack,
  type StackProps,
  Tags,
  Validations,
} from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  HttpApi,
  HttpRoute,
  HttpRouteKey,
  type HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
} from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key, KeySpec, KeyUsage } from 'aws-cdk-lib/aws-kms';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { legacyTableDefinition, type TableShape } from '../shared/data/legacy-table.ts';
import {
  type IndexDefinition,
  type KeyAttribute,
  projectionTypeOf,
  tableDefinition,
} from '../shared/data/table.ts';
import { parseIssuer } from '../shared/domain/issuer.ts';
import { STAGE_THROTTLE } from '../shared/domain/limits.ts';
import {
  CLIENT_ADDRESS_HEADER_ENV,
  CUSTOMER_PORTAL_URL_ENV,
  ID_TOKEN_PUBLISHED_KEYS_ENV,
  ID_TOKEN_SIGNING_KEY_ENV,
  ISSUER_ENV,
} from '../shared/env.ts';
import { SWAGGER_UI_PACKAGE, swaggerUiAssets } from '../shared/http/api-reference.ts';
import {
  type CorsPolicy,
  corsPolicy,
  DEFAULT_ALLOW_ORIGINS,
  parseAllowOrigins,
} from '../shared/http/cors.ts';
import { routeKeysOf } from '../shared/http/routes.ts';
import {
  LOG_LEVEL_ENV,
  METRICS_NAMESPACE_ENV,
  metricsNamespaceOf,
} from '../shared/observability/telemetry.ts';
import {
  apiReference,
  idTokenKeyUsers,
  type OperationName,
  oauthDiscovery,
  operations,
  pipelineFunctions,
  routeNotFound,
  type ScheduledFunctionName,
  scheduledFunctions,
} from '../shared/operations.ts';
import { ApiFunction, constructId, type WebhookKeySetRef } from './function.ts';

export { constructId } from './function.ts';

import { FrontDoor, type FrontDoorProps } from './front-door.ts';
import { Monitoring } from './monitoring.ts';
import { MeterAggregation } from './usage.ts';
import { WebhookPipeline } from './webhooks.ts';

export interface CommerceApiStackProps extends StackProps {
  /** `prod`, or any other name for a disposable preview environment. */
  readonly stage: string;
  readonly branch?: string;
  /** Origins browsers may call the API from; default `*` (bearer tokens only, no cookies). */
  readonly corsAllowOrigins?: readonly string[];
  /**
   * The customer portal that session links point at (`https://portal.example.com`); default: the
   * API's own origin. The link carries the session token, so it must be a site you run.
   */
  readonly customerPortalUrl?: string;
  /**
   * The issuer: the API's base URL as clients reach it, `https://api.example.com` when a custom domain
   * fronts the stage; default: the HTTP API's own URL. Every absolute URL the API hands out (OAuth
   * discovery, `iss`, `registration_client_uri`, ID Tokens) is built on it.
   */
  readonly issuer?: string;
  /**
   * The ID Token signing key's generation (default 1). Raising it by one rotates: a new KMS key signs,
   * the previous one is still published in the JWKS until the next rotation removes it.
   */
  readonly idTokenKeyGeneration?: number;
  /** `LOG_LEVEL` of every function (debug, info, warn, error); default info. */
  readonly logLevel?: string;
  /** X-Ray active tracing on every function; default on. */
  readonly tracing?: boolean;
  /** Mailboxes the prod alarm topic notifies (each confirms once); default none. */
  readonly alarmEmails?: readonly string[];
  /**
   * Whether the KMS keys carry the stage tags (default yes). The deploy rehearsal turns it off
   * (`-c tagKmsKeys=false`): moto 5.2 fails to create an `AWS::KMS::Key` with Tags (KeyError 'TagKey').
   */
  readonly tagKmsKeys?: boolean;
  /**
   * `serve`: the first step of moving a stack deployed with the retired local indexes to a table
   * without them (docs/deploying.md, "Moving to a table without local indexes"). The functions keep
   * the old table (`Table`, declared exactly as before), and the new one (`DataTable`) is created
   * beside it, without a stream, for `npm run migrate:table` to fill. Default: `DataTable` only.
   */
  readonly legacyTable?: 'serve';
  /**
   * CloudFront + WAF in front, the `execute-api` endpoint disabled (infra/front-door.ts). Prod's
   * default is on, and needs the origin domain and its certificate; previews get none.
   */
  readonly frontDoor?: FrontDoorConfig;
  /** Reserved concurrency of the functions that could starve the rest (`RESERVED_CONCURRENCY`); default prod only. */
  readonly reservedConcurrency?: boolean;
}

export type FrontDoorConfig = Omit<FrontDoorProps, 'api' | 'stage' | 'stageName'>;

/**
 * Reserved concurrency: a ceiling (and a guaranteed floor) for the functions a flood could drive to
 * take the account's whole concurrency: the unauthenticated document functions and the OAuth client
 * endpoints. The rest share the unreserved pool, which AWS keeps at 100 or more.
 */
export const RESERVED_CONCURRENCY: Readonly<Record<string, number>> = {
  'route-not-found': 5,
  'api-reference': 5,
  'oauth-discovery': 5,
  'request-token': 50,
  'revoke-token': 10,
  'introspect-token': 10,
  'create-client': 10,
};

/** The context `-c frontDoor=false` or the prod front door's settings (`-c apiOriginDomain=…` and so on). */
export function frontDoorConfig(app: App, stage: string): FrontDoorConfig | undefined {
  const context = (name: string): string | undefined =>
    app.node.tryGetContext(`${name}:${stage}`) ?? app.node.tryGetContext(name);
  const wanted = context('frontDoor') ?? (stage === PRODUCTION_STAGE ? 'true' : 'false');
  if (String(wanted) === 'false') return undefined;
  const originDomainName = context('apiOriginDomain');
  const originCertificateArn = context('apiOriginCertificateArn');
  // Without its origin domain prod has no front door: synthesised anyway (the local stack, the
  // rehearsal on moto and every tool that synthesises the default stage need no domain), with a
  // warning on the stack (createStageStack) that deploying it so leaves the API open.
  if (!originDomainName || !originCertificateArn) return undefined;
  const aliases = context('apiAliases')
    ?.split(',')
    .map((alias) => alias.trim())
    .filter(Boolean);
  const viewerCertificateArn = context('apiCertificateArn');
  const webAclArn = context('webAclArn');
  return {
    originDomainName,
    originCertificateArn,
    ...(aliases?.length ? { aliases } : {}),
    ...(viewerCertificateArn ? { viewerCertificateArn } : {}),
    ...(webAclArn ? { webAclArn } : {}),
  };
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'];

export const PRODUCTION_STAGE = 'prod';

/** `-c pinEnvironment=true` pins the stack to the deployer's account and region (see `stageEnvironment`). */
export const PIN_ENVIRONMENT_CONTEXT = 'pinEnvironment';

/**
 * No account or region by default: the template then names them only through `AWS::Region` and
 * `AWS::AccountId`, so one template, synthesised anywhere (CI included), deploys to whichever account
 * and region the deployer's credentials and `AWS_REGION` name. The CLI always sets
 * `CDK_DEFAULT_REGION` (us-east-1 without configuration); passing it on would bake that region into
 * asset bucket names and permission `SourceArn`s. `-c pinEnvironment=true` pins the stack to the
 * CLI's account and region, which only context lookups need (this stack makes none); it refuses to
 * pin half an environment, which would quietly leave the other half to the deployer.
 */
export function stageEnvironment(app: App, env: NodeJS.ProcessEnv = process.env): Environment | undefined {
  const pin: unknown = app.node.tryGetContext(PIN_ENVIRONMENT_CONTEXT);
  if (pin !== true && pin !== 'true') return undefined;
  const { CDK_DEFAULT_ACCOUNT: account, CDK_DEFAULT_REGION: region } = env;
  if (!account || !region) {
    throw new Error(
      `-c ${PIN_ENVIRONMENT_CONTEXT}=true needs the account and region of your credentials ` +
        `(CDK_DEFAULT_ACCOUNT=${account ?? ''}, CDK_DEFAULT_REGION=${region ?? ''}): run it through the cdk CLI with credentials`,
    );
  }
  return { account, region };
}

/**
 * The stack `cdk -c stage=<stage> [-c branch=<branch>]` deploys: `CommerceApi-<stage>`,
 * `prod` when no stage is given. Every stage is its own stack, so a preview never touches prod.
 */
export function createStageStack(app: App, env?: Environment): CommerceApiStack {
  const stage: string = app.node.tryGetContext('stage') ?? PRODUCTION_STAGE;
  const branch: string | undefined = app.node.tryGetContext('branch');
  // `-c corsAllowOrigins:<stage>=...` for one stage, `-c corsAllowOrigins=...` for every stage.
  const origins =
    app.node.tryGetContext(`corsAllowOrigins:${stage}`) ?? app.node.tryGetContext('corsAllowOrigins');
  const portal: string | undefined =
    app.node.tryGetContext(`customerPortalUrl:${stage}`) ?? app.node.tryGetContext('customerPortalUrl');
  const logLevel: string | undefined =
    app.node.tryGetContext(`logLevel:${stage}`) ?? app.node.tryGetContext('logLevel');
  if (logLevel !== undefined && !LOG_LEVELS.includes(logLevel)) {
    throw new Error(`logLevel must be one of ${LOG_LEVELS.join(', ')}: ${logLevel}`);
  }
  const tracing: string | boolean | undefined =
    app.node.tryGetContext(`tracing:${stage}`) ?? app.node.tryGetContext('tracing');
  if (tracing !== undefined && !['true', 'false', true, false].includes(tracing)) {
    throw new Error(`tracing must be true or false: ${tracing}`);
  }
  // `-c alarmEmail=ops@example.com[,oncall@example.com]`, or `-c alarmEmail:<stage>=…` for one stage.
  const alarmEmail: string | undefined =
    app.node.tryGetContext(`alarmEmail:${stage}`) ?? app.node.tryGetContext('alarmEmail');
  const alarmEmails = alarmEmail
    ?.split(',')
    .map((email) => email.trim())
    .filter(Boolean);
  for (const email of alarmEmails ?? []) {
    if (!/^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/.test(email))
      throw new Error(`alarmEmail: not an e-mail address: ${email}`);
  }
  // `-c issuer:<stage>=https://api.example.com` (the custom domain), or `-c issuer=…` for every stage.
  const issuer: string | undefined =
    app.node.tryGetContext(`issuer:${stage}`) ?? app.node.tryGetContext('issuer');
  if (issuer !== undefined && !issuer.startsWith('https://')) {
    throw new Error(`issuer must be an https URL: ${issuer}`);
  }
  const generation: string | number | undefined =
    app.node.tryGetContext(`idTokenKeyGeneration:${stage}`) ?? app.node.tryGetContext('idTokenKeyGeneration');
  if (generation !== undefined && !/^[1-9]\d{0,3}$/.test(String(generation))) {
    throw new Error(`idTokenKeyGeneration must be a whole number from 1: ${generation}`);
  }
  const tagKmsKeys: string | boolean | undefined = app.node.tryGetContext('tagKmsKeys');
  if (tagKmsKeys !== undefined && !['true', 'false', true, false].includes(tagKmsKeys)) {
    throw new Error(`tagKmsKeys must be true or false: ${tagKmsKeys}`);
  }
  // `-c legacyTable=serve`: the first deploy of a move off the retired local indexes (docs/deploying.md).
  const legacyTable: unknown =
    app.node.tryGetContext(`legacyTable:${stage}`) ?? app.node.tryGetContext('legacyTable');
  if (legacyTable !== undefined && legacyTable !== 'serve') {
    throw new Error(`legacyTable must be serve (or left out once the data has moved): ${legacyTable}`);
  }
  if (portal !== undefined && !/^https:\/\/[^/?#]+(\/[^?#]*)?$/.test(portal)) {
    throw new Error(`customerPortalUrl must be an https URL without query or fragment: ${portal}`);
  }
  const frontDoor = frontDoorConfig(app, stage);
  const stack = new CommerceApiStack(app, `CommerceApi-${stage}`, {
    stage,
    ...(frontDoor ? { frontDoor } : {}),
    ...(branch ? { branch } : {}),
    ...(origins !== undefined ? { corsAllowOrigins: parseAllowOrigins(origins) } : {}),
    ...(portal !== undefined ? { customerPortalUrl: portal } : {}),
    ...(issuer !== undefined ? { issuer: parseIssuer(issuer) } : {}),
    ...(generation !== undefined ? { idTokenKeyGeneration: Number(generation) } : {}),
    ...(logLevel !== undefined ? { logLevel } : {}),
    ...(tracing !== undefined ? { tracing: String(tracing) === 'true' } : {}),
    ...(alarmEmails?.length ? { alarmEmails } : {}),
    ...(tagKmsKeys !== undefined ? { tagKmsKeys: String(tagKmsKeys) === 'true' } : {}),
    ...(legacyTable === 'serve' ? { legacyTable } : {}),
    ...(env ? { env } : {}),
  });
  if (stage === PRODUCTION_STAGE && !frontDoor && app.node.tryGetContext('frontDoor') === undefined) {
    Annotations.of(stack).addWarningV2(
      'commerce-api:no-front-door',
      'prod without its front door (CloudFront + WAF, execute-api disabled): pass -c apiOriginDomain=… -c apiOriginCertificateArn=… (docs/deploying.md), or -c frontDoor=false to mean it',
    );
  }
  return stack;
}

const corsMethods = (policy: CorsPolicy): CorsHttpMethod[] =>
  policy.allowMethods.map((method) => CorsHttpMethod[method as keyof typeof CorsHttpMethod]);

/**
 * One JSON line per request. Only `$context` fields: no header, so no bearer token, ever.
 * Every value is quoted because API Gateway writes `-` for a missing one.
 */
const accessLogFormat = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    time: '$context.requestTime',
    ip: '$context.identity.sourceIp',
    userAgent: '$context.identity.userAgent',
    method: '$context.httpMethod',
    path: '$context.path',
    routeKey: '$context.routeKey',
    protocol: '$context.protocol',
    status: '$context.status',
    responseLength: '$context.responseLength',
    responseLatency: '$context.responseLatency',
    integrationStatus: '$context.integrationStatus',
    integrationLatency: '$context.integrationLatency',
    integrationError: '$context.integrationErrorMessage',
    error: '$context.error.message',
  }),
);

const projectRoot = fileURLToPath(new URL('..', import.meta.url));

/** The webhook key set's name in Secrets Manager: one per stack. */
export const webhookKeySetName = (stackName: string) => `${stackName}/webhook-key-set`;

const attributeTypes = { S: AttributeType.STRING } as const;
const attribute = (key: KeyAttribute): Attribute => ({ name: key.name, type: attributeTypes[key.type] });

export class CommerceApiStack extends Stack {
  /** The table the functions use: `DataTable`, or during a move (`legacyTable: 'serve'`) the old `Table`. */
  readonly table: Table;
  /** During a move only: the new table, beside the old one, for `npm run migrate:table` to fill. */
  readonly migrationTarget?: Table;
  /** The webhook key set (shared/domain/keyring.ts): seals every endpoint's signing secret. */
  readonly webhookKeySet: Secret;
  /** The customer-managed KMS key (rotated yearly) that Secrets Manager seals the key set with. */
  readonly webhookKeySetKey: Key;
  /** How the functions name it and how their grants match it. */
  readonly webhookKeySetRef: WebhookKeySetRef;
  readonly api: HttpApi;
  readonly apiStage: HttpStage;
  readonly accessLogs: LogGroup;
  /** Keyed by operation name, so tests can find each function's resources. */
  readonly functions: Record<OperationName, ApiFunction>;
  /** Behind the `$default` route: the contract's 404 and 405 for every request no operation takes. */
  readonly routeNotFound: ApiFunction;
  /** `GET /openapi.json` and `GET /docs`: the API reference, its assets shipped with the function. */
  readonly apiReference: ApiFunction;
  /** Functions a schedule invokes (the subscription clock), keyed by name. */
  readonly scheduled: Record<ScheduledFunctionName, ApiFunction>;
  /** `GET /.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`. */
  readonly oauthDiscovery: ApiFunction;
  readonly cors: CorsPolicy;
  readonly stage: string;
  /** The KMS key that signs ID Tokens now, and the one being retired (published in the JWKS only). */
  readonly idTokenKeys: { signing: Key; retiring?: Key };
  /** The issuer the functions are given (`ISSUER_URL`): the configured one, else the API's URL. */
  readonly issuer: string;
  /** Prod only: the dashboard and the operation and table alarms. */
  readonly monitoring?: Monitoring;
  /** The table's stream → relay → delivery queue → deliverer. */
  readonly webhooks: WebhookPipeline;
  readonly meterAggregation: MeterAggregation;
  /** CloudFront + WAF in front (prod by default); undefined: the execute-api endpoint is the way in. */
  readonly frontDoor?: FrontDoor;

  constructor(scope: Construct, id: string, props: CommerceApiStackProps) {
    super(scope, id, props);
    this.stage = props.stage;
    const production = props.stage === PRODUCTION_STAGE;

    if (props.legacyTable === 'serve') {
      // Construct id `Table` and the old definition: the old table's logical id and properties,
      // unchanged, so CloudFormation leaves it (and its data) alone.
      this.table = this.createTable(production, 'Table', legacyTableDefinition, true);
      this.migrationTarget = this.createTable(production, 'DataTable', tableDefinition, false);
    } else {
      this.table = this.createTable(production, 'DataTable', tableDefinition, true);
    }
    this.webhookKeySetKey = this.createWebhookKeySetKey(production);
    this.webhookKeySet = this.createWebhookKeySet(production, this.webhookKeySetKey);
    const keySetName = webhookKeySetName(this.stackName);
    this.webhookKeySetRef = {
      name: keySetName,
      keyArn: this.webhookKeySetKey.keyArn,
      arnPattern: this.formatArn({
        service: 'secretsmanager',
        resource: 'secret',
        resourceName: `${keySetName}-??????`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    };

    this.cors = corsPolicy(props.corsAllowOrigins ?? DEFAULT_ALLOW_ORIGINS);
    this.api = new HttpApi(this, 'HttpApi', {
      apiName: `commerce-api-${props.stage}`,
      // The default stage is added below because only an explicit stage takes throttle settings.
      createDefaultStage: false,
      // Behind the front door the API is reached only through it (its custom domain).
      disableExecuteApiEndpoint: props.frontDoor !== undefined,
      // API Gateway answers preflights itself and adds these headers to every answer; the local
      // server mirrors it from the same policy (shared/http/cors.ts).
      corsPreflight: {
        allowOrigins: [...this.cors.allowOrigins],
        allowMethods: corsMethods(this.cors),
        allowHeaders: [...this.cors.allowHeaders],
        exposeHeaders: [...this.cors.exposeHeaders],
        maxAge: Duration.seconds(this.cors.maxAgeSeconds),
        allowCredentials: false,
      },
    });
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Every operation requires a credential (personal access token, OAuth access token, customer ' +
        'session, registration token, or OAuth client authentication at the token endpoints) that the ' +
        "function verifies itself: it looks up the token's SHA-256 in the table, checks its kind, expiry, " +
        'revocation and scopes, and answers 401/403 in the shapes the API contract and the OAuth RFCs ' +
        'define. A Lambda authorizer would repeat that lookup on every request and could not produce ' +
        'those error bodies. The OpenAPI document, its reference page and the OAuth discovery documents ' +
        'are public by design.',
    });
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: production ? RetentionDays.ONE_MONTH : RetentionDays.ONE_WEEK,
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.apiStage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: accessLogFormat,
      },
      // A backstop below the account's regional limit (10k rps shared by every API in the account):
      // fairness between tenants is the functions' quotas (shared/http/quota.ts), which keep one
      // tenant far below this (docs/limits.md#request-quotas).
      throttle: { ...STAGE_THROTTLE },
    });

    // Each request's log line is also its metrics document (shared/observability/telemetry.ts),
    // in a namespace per stage so that a preview's traffic never mixes with prod's.
    // The API's own URL ends in a slash; the issuer has none (shared/domain/issuer.ts). Every function
    // is told its stage's issuer, the one setting every absolute URL the API hands out is built on.
    if (props.frontDoor) {
      this.frontDoor = new FrontDoor(this, 'FrontDoor', {
        ...props.frontDoor,
        api: this.api,
        stage: this.apiStage,
        stageName: props.stage,
      });
    }
    this.issuer =
      props.issuer ??
      this.frontDoor?.url ??
      `https://${this.api.apiId}.execute-api.${this.region}.${this.urlSuffix}`;
    const telemetry = {
      [METRICS_NAMESPACE_ENV]: metricsNamespaceOf(props.stage),
      [LOG_LEVEL_ENV]: props.logLevel ?? 'info',
      [ISSUER_ENV]: this.issuer,
      // Behind CloudFront the caller's address is the header CloudFront sets (shared/http/api.ts).
      ...(this.frontDoor ? { [CLIENT_ADDRESS_HEADER_ENV]: 'cloudfront-viewer-address' } : {}),
    };
    this.idTokenKeys = this.createIdTokenKeys(props.idTokenKeyGeneration ?? 1);

    const functions: Partial<Record<OperationName, ApiFunction>> = {};
    for (const operation of operations) {
      const fn = new ApiFunction(this, constructId(operation.name), {
        operation,
        table: this.table,
        projectRoot,
        production,
        tracing: props.tracing ?? true,
        webhookKeySet: this.webhookKeySetRef,
        environment: {
          ...telemetry,
          ...(props.customerPortalUrl ? { [CUSTOMER_PORTAL_URL_ENV]: props.customerPortalUrl } : {}),
        },
      });
      functions[operation.name] = fn;

      this.addRoutes(operation.name, fn, [operation]);
    }

    this.functions = functions as Record<OperationName, ApiFunction>;

    const requireFromRoot = createRequire(path.join(projectRoot, 'package.json'));
    this.apiReference = new ApiFunction(this, constructId(apiReference.name), {
      operation: { ...apiReference, access: [] },
      table: this.table,
      projectRoot,
      production,
      tracing: props.tracing ?? true,
      environment: telemetry,
      files: Object.keys(swaggerUiAssets).map((file) =>
        requireFromRoot.resolve(`${SWAGGER_UI_PACKAGE}/${file}`),
      ),
    });
    this.addRoutes(apiReference.name, this.apiReference, apiReference.routes);

    this.oauthDiscovery = new ApiFunction(this, constructId(oauthDiscovery.name), {
      operation: { ...oauthDiscovery, access: [] },
      table: this.table,
      projectRoot,
      production,
      tracing: props.tracing ?? true,
      environment: telemetry,
    });
    this.grantIdTokenKeys({ ...this.functions, [oauthDiscovery.name]: this.oauthDiscovery });
    this.addRoutes(oauthDiscovery.name, this.oauthDiscovery, oauthDiscovery.routes);

    this.webhooks = new WebhookPipeline(this, 'Webhooks', {
      table: this.table,
      webhookKeySet: this.webhookKeySetRef,
      projectRoot,
      production,
      tracing: props.tracing ?? true,
      namespace: metricsNamespaceOf(props.stage),
      environment: telemetry,
    });
    this.meterAggregation = new MeterAggregation(this, 'MeterAggregation', {
      table: this.table,
      failures: this.webhooks.relayFailures,
      projectRoot,
      production,
      tracing: props.tracing ?? true,
      environment: telemetry,
    });

    this.routeNotFound = new ApiFunction(this, constructId(routeNotFound.name), {
      operation: { ...routeNotFound, access: [] },
      table: this.table,
      projectRoot,
      production,
      tracing: props.tracing ?? true,
      environment: telemetry,
    });
    new HttpRoute(this.api, 'DefaultRoute', {
      httpApi: this.api,
      routeKey: HttpRouteKey.DEFAULT,
      integration: new HttpLambdaIntegration('RouteNotFoundIntegration', this.routeNotFound.function, {
        payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
      }),
    });

    const scheduled: Partial<Record<ScheduledFunctionName, ApiFunction>> = {};
    for (const definition of scheduledFunctions) {
      const fn = new ApiFunction(this, constructId(definition.name), {
        operation: definition,
        table: this.table,
        projectRoot,
        production,
        tracing: props.tracing ?? true,
        environment: telemetry,
        timeout: Duration.seconds(definition.timeoutSeconds),
      });
      // A failed run is not retried: the next scheduled run takes up whatever is still due.
      fn.function.configureAsyncInvoke({ retryAttempts: 0 });
      // An EventBridge rule, not EventBridge Scheduler: a fixed rate needs no time zone, window or
      // one-off schedule, and a rule invokes through the function's resource policy (no role).
      new Rule(this, `${constructId(definition.name)}Schedule`, {
        description: `Runs ${definition.name} (${definition.schedule})`,
        schedule: Schedule.expression(definition.schedule),
        targets: [new LambdaFunction(fn.function, { retryAttempts: 0 })],
      });
      scheduled[definition.name] = fn;
    }
    this.scheduled = scheduled as Record<ScheduledFunctionName, ApiFunction>;

    if (production) {
      // A nested stack: the alarms and the dashboard grow with the operations, and the stack's own
      // resources must stay under CloudFormation's 500 per template.
      this.monitoring = new Monitoring(this, 'Monitoring', {
        stage: props.stage,
        namespace: metricsNamespaceOf(props.stage),
        api: this.api,
        table: this.table,
        functions: this.httpFunctions(),
        scheduled: this.scheduled,
        webhookDeadLetters: {
          deliveries: this.webhooks.deadLetterQueue,
          relayFailures: this.webhooks.relayFailures,
        },
        meterAggregator: { fn: this.meterAggregation.aggregator },
        ...(props.alarmEmails ? { alarmEmails: props.alarmEmails } : {}),
      });
      this.monitoring.notify(this.webhooks.alarms);
      this.monitoring.notify(
        this.webhooks.createNestedAlarms(this.monitoring.alarmStack, metricsNamespaceOf(props.stage)),
      );
      new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.alarmTopic.topicArn });
    }

    if (props.reservedConcurrency ?? production) this.reserveConcurrency();

    new CfnOutput(this, 'ApiUrl', { value: this.frontDoor ? `${this.frontDoor.url}/` : this.apiStage.url });
    new CfnOutput(this, 'Issuer', { value: this.issuer });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    if (this.migrationTarget) {
      new CfnOutput(this, 'MigrationTableName', { value: this.migrationTarget.tableName });
    }
    // For the operator CLI against this stack (`WEBHOOK_KEY_SET_ID=… npm run admin -- webhook create …`).
    new CfnOutput(this, 'WebhookKeySetName', { value: this.webhookKeySetRef.name });

    // CloudFormation takes no tags on a dashboard (CDK would write them; the deployment would fail);
    // the KMS keys only when the rehearsal asks (`tagKmsKeys`).
    const untaggable = {
      excludeResourceTypes: [
        'AWS::CloudWatch::Dashboard',
        ...(props.tagKmsKeys === false ? ['AWS::KMS::Key'] : []),
      ],
    };
    Tags.of(this).add('stage', props.stage, untaggable);
    if (props.branch) Tags.of(this).add('branch', props.branch, untaggable);
  }

  /** The functions behind the HTTP API by name: the operations', the reference's, discovery's, the `$default` route's. */
  httpFunctions(): Record<string, ApiFunction> {
    return {
      ...this.functions,
      [apiReference.name]: this.apiReference,
      [oauthDiscovery.name]: this.oauthDiscovery,
      [routeNotFound.name]: this.routeNotFound,
    };
  }

  /** Every Lambda function of the stack by name: the HTTP API's, the scheduled ones, the webhook pipeline's and the meter aggregator. */
  lambdaFunctions(): Record<string, ApiFunction> {
    return {
      ...this.httpFunctions(),
      ...this.scheduled,
      [pipelineFunctions[0].name]: this.webhooks.relay,
      [pipelineFunctions[1].name]: this.webhooks.deliverer,
      [pipelineFunctions[2].name]: this.meterAggregation.aggregator,
    };
  }

  /** `RESERVED_CONCURRENCY` on the functions it names. */
  private reserveConcurrency(): void {
    const functions = this.lambdaFunctions();
    for (const [name, reserved] of Object.entries(RESERVED_CONCURRENCY)) {
      const fn = functions[name];
      if (!fn) throw new Error(`RESERVED_CONCURRENCY names no function: ${name}`);
      (fn.function.node.defaultChild as CfnFunction).reservedConcurrentExecutions = reserved;
    }
  }

  /** Both spellings of each path (`routeKeysOf`) to the function, through one integration. */
  private addRoutes(name: string, fn: ApiFunction, paths: readonly { method: string; path: string }[]): void {
    // One invoke permission per function for this API, not one per route: the route table decides
    // which route reaches which function, and a permission per route spelling would double the
    // stack's largest resource count.
    const integration = new HttpLambdaIntegration(`${constructId(name)}Integration`, fn.function, {
      payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
      scopePermissionToRoute: false,
    });
    for (const routeKey of paths.flatMap(routeKeysOf)) {
      // Children of the API, as `addRoutes` makes them: the API's cdk-nag acknowledgment covers them.
      new HttpRoute(this.api, `Route ${routeKey}`, {
        httpApi: this.api,
        routeKey: HttpRouteKey.with(
          routeKey.slice(routeKey.indexOf(' ') + 1),
          routeKey.slice(0, routeKey.indexOf(' ')) as HttpRouteKey['method'],
        ),
        integration,
      });
    }
  }

  /**
   * The ID Token keys: KMS asymmetric keys (RSA_2048, SIGN_VERIFY; RS256 is the algorithm every
   * OpenID provider must offer). The private halves never leave KMS, so no function, log, answer or
   * table can hold one. KMS does not rotate asymmetric keys: rotation is a new generation
   * (`idTokenKeyGeneration`), whose key signs while the previous one stays in the JWKS until the next
   * rotation removes it from the template (deleted after KMS's 7-day waiting period; it seals nothing,
   * so nothing is lost with it beyond ID Tokens already expired).
   */
  private createIdTokenKeys(generation: number): { signing: Key; retiring?: Key } {
    const key = (n: number) =>
      new Key(this, `IdTokenKey${n}`, {
        description: `Signs ID Tokens (RS256), generation ${n}`,
        keySpec: KeySpec.RSA_2048,
        keyUsage: KeyUsage.SIGN_VERIFY,
        pendingWindow: Duration.days(7),
        removalPolicy: RemovalPolicy.DESTROY,
      });
    const signing = key(generation);
    return generation > 1 ? { signing, retiring: key(generation - 1) } : { signing };
  }

  /**
   * The token endpoint gets `kms:Sign` on the signing key alone, the discovery function
   * `kms:GetPublicKey` on the published keys alone (`idTokenKeyUsers`), each with the ARNs it needs.
   */
  private grantIdTokenKeys(functions: Record<string, ApiFunction>): void {
    const { signing, retiring } = this.idTokenKeys;
    const published = retiring ? [signing, retiring] : [signing];
    for (const name of idTokenKeyUsers.sign) {
      const fn = functions[name] as ApiFunction;
      fn.function.addEnvironment(ID_TOKEN_SIGNING_KEY_ENV, signing.keyArn);
      fn.role.addToPolicy(
        new PolicyStatement({ effect: Effect.ALLOW, actions: ['kms:Sign'], resources: [signing.keyArn] }),
      );
    }
    for (const name of idTokenKeyUsers.publish) {
      const fn = functions[name] as ApiFunction;
      fn.function.addEnvironment(ID_TOKEN_PUBLISHED_KEYS_ENV, published.map((key) => key.keyArn).join(','));
      fn.role.addToPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['kms:GetPublicKey'],
          resources: published.map((key) => key.keyArn),
        }),
      );
    }
  }

  /**
   * The key the webhook key set is sealed with: customer-managed, so that its use is the stack's to
   * grant (only Decrypt through Secrets Manager to the functions that read the key set) and to audit,
   * with KMS's yearly rotation of its key material on (old material keeps opening what it sealed).
   * Its key policy is CDK's default (the account, so IAM policies decide) plus the statement
   * Secrets Manager needs to use it for this account. Prod keeps it with the key set.
   */
  private createWebhookKeySetKey(production: boolean): Key {
    return new Key(this, 'WebhookKeySetKey', {
      description: `${this.stackName}: seals the webhook key set in Secrets Manager`,
      enableKeyRotation: true,
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      // A preview's key goes with its stack after the shortest wait KMS allows.
      ...(production ? {} : { pendingWindow: Duration.days(7) }),
    });
  }

  /**
   * The webhook key set, generated by CloudFormation in the shape `parseKeySet` reads
   * (`{"current":"k1","k1":"<64 letters and digits>"}`), encrypted with the stack's own KMS key.
   * Prod keeps it when the stack goes: without it no stored signing secret can be opened.
   */
  private createWebhookKeySet(production: boolean, encryptionKey: Key): Secret {
    const secret = new Secret(this, 'WebhookKeySet', {
      encryptionKey,
      // A known name, so that grants and functions name it without a reference to the resource (and a
      // destroyed prod stack's retained key set is found again, not silently replaced by a new one).
      secretName: webhookKeySetName(this.stackName),
      description: 'Webhook key set: seals the signing secrets of webhook endpoints (versioned keys)',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ current: 'k1' }),
        generateStringKey: 'k1',
        passwordLength: 64,
        excludePunctuation: true,
        includeSpace: false,
      },
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotation is by key version, not by replacing the value: an operator adds k2 to the key set and ' +
        'makes it current, then re-seals every stored secret under k2 (`npm run admin -- webhook ' +
        'rotate-keys`, docs/deploying.md); endpoints sealed under k1 stay readable meanwhile. A rotation ' +
        'Lambda replacing the value would make every stored secret unreadable.',
    });
    return secret;
  }

  /**
   * A table of `definition`. `stream: false` only for a move's new table while it is filled: its
   * stream is turned on (an in-place update) by the deploy that points the functions and the relay
   * at it, so the relay never sees the copy's writes as new events.
   */
  private createTable(production: boolean, id: string, definition: TableShape, stream: boolean): Table {
    const table = new Table(this, id, {
      partitionKey: attribute(definition.partitionKey),
      sortKey: attribute(definition.sortKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: definition.timeToLiveAttribute,
      // The outbox's way out: the webhook relay reads new event items from it.
      ...(stream ? { stream: StreamViewType[definition.streamViewType] } : {}),
      // Preview stacks are disposable: keeping their data would only block the next deploy.
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      deletionProtection: production,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: production },
    });
    if (!production) {
      Validations.of(table).acknowledge({
        id: 'AwsSolutions-DDB3',
        reason:
          'Preview stage: a disposable per-branch environment holding only test data, deleted with its ' +
          'stack. Point-in-time recovery is enabled in prod.',
      });
    }

    for (const index of definition.indexes as readonly IndexDefinition[]) {
      if (index.kind === 'global') {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: attribute(index.partitionKey),
          sortKey: attribute(index.sortKey),
          projectionType: ProjectionType[projectionTypeOf(index)],
        });
      } else {
        // An LSI always shares the table's partition key; a definition saying otherwise is a bug.
        if (index.partitionKey.name !== definition.partitionKey.name) {
          throw new Error(`local index ${index.name} must use partition key ${definition.partitionKey.name}`);
        }
        table.addLocalSecondaryIndex({
          indexName: index.name,
          sortKey: attribute(index.sortKey),
          projectionType: ProjectionType.ALL,
        });
      }
    }
    return table;
  }
}
