import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { INLINE_POLICY_NAME } from '../../infra/function.ts';
import { CommerceApiStack, createStageStack } from '../../infra/stack.ts';
import {
  AGGREGATOR_BATCH_SIZE,
  AGGREGATOR_ITERATOR_AGE_ALARM_SECONDS,
  AGGREGATOR_RETRY_ATTEMPTS,
  AGGREGATOR_TIMEOUT_SECONDS,
  AGGREGATOR_WINDOW_SECONDS,
} from '../../infra/usage.ts';
import {
  DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS,
  RELAY_ITERATOR_AGE_ALARM_SECONDS,
} from '../../infra/webhooks.ts';
import { stackRoutes } from '../../scripts/local/apigw.ts';
import { resolve } from '../../scripts/local/iam/policy.ts';
import { legacyTableDefinition } from '../../shared/data/legacy-table.ts';
import {
  type IndexDefinition,
  leadingKeyPattern,
  projectionTypeOf,
  tableDefinition,
} from '../../shared/data/table.ts';
import { STAGE_THROTTLE } from '../../shared/domain/limits.ts';
import { corsPolicy } from '../../shared/http/cors.ts';
import { DEFAULT_ROUTE_KEY } from '../../shared/http/routes.ts';
import {
  oauthDiscovery,
  operations,
  pipelineFunctions,
  routeNotFound,
  scheduledFunctions,
  type TableGrant,
  usesWebhookKeySet,
} from '../../shared/operations.ts';
import { aggregatorStreamFilter } from '../../shared/services/meter-aggregation.ts';
import { CIRCUIT_MAX_WAIT_SECONDS } from '../../shared/webhooks/circuit.ts';
import { relayStreamFilters } from '../../shared/webhooks/relay.ts';
import { sharedNestedTemplate, sharedStage } from '../support/stages.ts';

/**
 * One function per operation, the API reference's (`/openapi.json`, `/docs`), discovery's, the
 * `$default` route's, one per scheduled function and the webhook pipeline's two.
 */
const FUNCTION_COUNT = operations.length + 3 + scheduledFunctions.length + pipelineFunctions.length;

/** IAM's quota on the inline policies of one role, in characters without whitespace. */
const IAM_ROLE_INLINE_POLICY_CHARACTERS = 10_240;

/** Resources per template; the monitoring stack, nested, counts as one in its parent. */
const CLOUDFORMATION_RESOURCE_LIMIT = 500;

// The CLI feeds cdk.json's context (feature flags) to the app; tests must synthesise the same template.
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));

/**
 * Prod (bundled, as `npm run synth`) and a preview stage (pr-42), both tagged branch feature/test:
 * synthesised once per run for every infra file (test/support/synth.ts). What the tests would read
 * from the construct tree (logical ids, resolved tokens) comes with them in `model`.
 */
const prod = sharedStage('prod');
const preview = sharedStage('preview');

/** Prod's alarms per function: the nested stack's own template. */
const monitoring = sharedNestedTemplate(prod.model, 'alarms');
/** The parameters prod passes to the monitoring stack, by name. */
const monitoringParameters = (): Record<string, unknown> => {
  const [nested] = Object.values(prod.template.findResources('AWS::CloudFormation::Stack'));
  return nested?.Properties?.Parameters ?? {};
};
/** What each Lambda throttle alarm watches, as the parent stack names it (`{ Ref: <function> }`). */
const throttleAlarmFunctions = () =>
  Object.values(monitoring.findResources('AWS::CloudWatch::Alarm'))
    .filter((alarm) => alarm.Properties.MetricName === 'Throttles')
    .map((alarm) => {
      const [dimension] = alarm.Properties.Dimensions as { Name: string; Value: { Ref: string } }[];
      expect(dimension?.Name).toBe('FunctionName');
      return monitoringParameters()[dimension?.Value.Ref ?? ''];
    });

type Synth = typeof prod;
// biome-ignore lint/suspicious/noExplicitAny: template JSON is untyped; the assertions check its shape.
type Json = any;
type Resource = { Type: string; Properties: Record<string, Json>; DeletionPolicy?: string; Metadata?: Json };
type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };

const XRAY_ACTIONS = ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'];

/** Logical ids of a function's resources, by function name. */
const idsOf = ({ model }: Synth, name: string) => {
  const ids = model.functions[name];
  if (!ids) throw new Error(`no function ${name}`);
  return ids;
};
const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
const resources = ({ template }: Synth, type: string) =>
  template.findResources(type) as Record<string, Resource>;

/** Every statement of the function's role: its inline policies, and any policy attached to it. */
function statementsOf(s: Synth, functionName: string): Statement[] {
  const roleId = idsOf(s, functionName).role;
  const roleRef = { Ref: roleId };
  const inline = (resources(s, 'AWS::IAM::Role')[roleId]?.Properties.Policies ?? []) as Json[];
  return [
    ...inline.flatMap((policy) => policy.PolicyDocument.Statement as Statement[]),
    ...Object.values(resources(s, 'AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(JSON.stringify(roleRef)))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]),
  ];
}

const actionsOf = (statements: Statement[]) => statements.flatMap((statement) => asArray(statement.Action));
const tableActionsOf = (statements: Statement[]) =>
  actionsOf(statements).filter((action) => action.startsWith('dynamodb:'));

/** The ID Token key of a generation, by logical id (`IdTokenKey<n>`), and its ARN as the template names it. */
const keyId = ({ template }: Synth | { template: Template }, generation: number): string => {
  const id = Object.keys(template.findResources('AWS::KMS::Key')).find((logical) =>
    logical.startsWith(`IdTokenKey${generation}`),
  );
  if (!id) throw new Error(`no ID Token key of generation ${generation}`);
  return id;
};
const keyArn = (s: Synth | { template: Template }, generation: number) => ({
  'Fn::GetAtt': [keyId(s, generation), 'Arn'],
});
/**
 * The issuer a stage without `issuer` context gives its functions: the front door's URL in prod
 * (infra/front-door.ts), the HTTP API's own URL in a preview.
 */
const frontDoorIssuer = (s: Synth) => {
  const [id] = Object.keys(resources(s, 'AWS::CloudFront::Distribution'));
  return { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [id, 'DomainName'] }]] };
};
const defaultIssuer = (s: Synth) => (s.model.stage === 'prod' ? frontDoorIssuer(s) : executeApiIssuer(s));
const executeApiIssuer = (s: Synth) => ({
  'Fn::Join': [
    '',
    [
      'https://',
      { Ref: s.model.ids.api },
      '.execute-api.',
      { Ref: 'AWS::Region' },
      '.',
      { Ref: 'AWS::URLSuffix' },
    ],
  ],
});

/**
 * The table's logical id in every stack deployed before the local indexes were retired (main's
 * synthesised template): the old table must keep it while the data moves, or CloudFormation would
 * replace it.
 */
const LEGACY_TABLE_LOGICAL_ID = 'TableCD117FA1';

const keySchema = (partitionKey: { name: string }, sortKey: { name: string }) => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' },
  { AttributeName: sortKey.name, KeyType: 'RANGE' },
];
const indexesOfKind = (kind: 'global' | 'local') =>
  (tableDefinition.indexes as readonly IndexDefinition[])
    .filter((index) => index.kind === kind)
    .map((index) => ({
      IndexName: index.name,
      KeySchema: keySchema(index.partitionKey, index.sortKey),
      Projection: { ProjectionType: projectionTypeOf(index) },
    }));

describe.each([
  ['prod', prod],
  ['preview', preview],
] as const)('%s stage', (stage, s) => {
  it("stays under CloudFormation's 500 resources per template, with one invoke permission per function", () => {
    const count = Object.keys(s.template.toJSON().Resources).length;
    const perFunction = count / FUNCTION_COUNT;
    const room = Math.floor((CLOUDFORMATION_RESOURCE_LIMIT - count) / perFunction);
    console.log(
      `${stage}: ${count} resources, ~${perFunction.toFixed(1)} per function, room for ~${room} more`,
    );
    expect(count).toBeLessThanOrEqual(CLOUDFORMATION_RESOURCE_LIMIT);
    // The pipeline's functions are invoked by event source mappings (their roles), not by a permission.
    s.template.resourceCountIs('AWS::Lambda::Permission', FUNCTION_COUNT - pipelineFunctions.length);
  });

  it("writes each function role its grants as one inline policy, no policy resource, within IAM's 10,240 characters", () => {
    // A policy resource per role was 60 of the stack's 500 resources (infra/function.ts).
    s.template.resourceCountIs('AWS::IAM::Policy', 0);
    const roles = resources(s, 'AWS::IAM::Role');
    // As IAM counts it: the resolved document without whitespace, with a long table name.
    const context = {
      region: 'ap-southeast-2',
      accountId: '123456789012',
      partition: 'aws',
      tableLogicalId: s.model.ids.table,
      tableName: `${s.model.stackName}-${s.model.ids.table}-ABCDEFGHIJKLM`,
    };
    const sizes = Object.entries(s.model.functions).map(([name, ids]) => {
      const policies = (roles[ids.role]?.Properties.Policies ?? []) as Json[];
      expect(
        policies.map((policy) => policy.PolicyName),
        name,
      ).toEqual([INLINE_POLICY_NAME]);
      const size = JSON.stringify(resolve(policies[0].PolicyDocument, context)).length;
      expect(size, name).toBeLessThan(IAM_ROLE_INLINE_POLICY_CHARACTERS);
      return [size, name] as const;
    });
    const [largest, name] = sizes.reduce((a, b) => (b[0] > a[0] ? b : a));
    console.log(
      `${stage}: largest inline policy ${largest} characters (${name}) of ${IAM_ROLE_INLINE_POLICY_CHARACTERS}`,
    );
  });

  it("has one arm64 Node.js 22 function per operation, plus the API reference's, discovery's and the $default route's", () => {
    s.template.resourceCountIs('AWS::Lambda::Function', FUNCTION_COUNT);
    s.template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      MemorySize: 512,
    });
    // API functions stop at 10 s; scheduled ones at their own timeout; the pipeline's take a batch
    // (see infra/webhooks.ts).
    const pipelineTimeouts: Record<string, number> = {
      'webhook-relay': 60,
      'webhook-deliverer': 30,
      'meter-aggregator': 60,
    };
    for (const [name, fn] of Object.entries(s.model.functions)) {
      const scheduled = scheduledFunctions.find((definition) => definition.name === name);
      expect(resources(s, 'AWS::Lambda::Function')[fn.function]?.Properties.Timeout, name).toBe(
        scheduled ? scheduled.timeoutSeconds : (pipelineTimeouts[name] ?? 10),
      );
    }
    for (const op of operations) {
      const fnId = idsOf(s, op.name).function;
      expect(resources(s, 'AWS::Lambda::Function')[fnId]?.Properties.Environment.Variables).toEqual({
        TABLE_NAME: { Ref: s.model.ids.table },
        NODE_OPTIONS: '--enable-source-maps',
        // Declared empty (inert) so `sam local --env-vars` can point it at DynamoDB Local.
        AWS_ENDPOINT_URL_DYNAMODB: '',
        METRICS_NAMESPACE: `CommerceApi/${s.model.stage}`,
        LOG_LEVEL: 'info',
        // The configured issuer (here none: the API's own URL), never the request's Host.
        ISSUER_URL: defaultIssuer(s),
        // Behind the prod front door the caller's address is CloudFront's header (shared/http/api.ts).
        ...(s.model.stage === 'prod' && { CLIENT_ADDRESS_HEADER: 'cloudfront-viewer-address' }),
        // Only the token endpoint signs ID Tokens, with the current key.
        ...(op.name === 'request-token' && { ID_TOKEN_SIGNING_KEY_ARN: keyArn(s, 1) }),
        // Only the functions that seal or open webhook secrets learn where the key set is.
        ...('webhookKeySet' in op && {
          WEBHOOK_KEY_SET_ID: `CommerceApi-${s.model.stage}/webhook-key-set`,
          AWS_ENDPOINT_URL_SECRETS_MANAGER: '',
        }),
      });
    }
    // The $default route's function touches no table: no table name, no endpoint to override.
    const defaultFnId = idsOf(s, routeNotFound.name).function;
    expect(resources(s, 'AWS::Lambda::Function')[defaultFnId]?.Properties.Environment.Variables).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      METRICS_NAMESPACE: `CommerceApi/${s.model.stage}`,
      LOG_LEVEL: 'info',
      ISSUER_URL: defaultIssuer(s),
      ...(s.model.stage === 'prod' && { CLIENT_ADDRESS_HEADER: 'cloudfront-viewer-address' }),
    });
  });

  it('declares exactly the routes the local server selects among, each to the same function, payload 2.0', () => {
    const routes = Object.values(resources(s, 'AWS::ApiGatewayV2::Route'));
    const integrations = resources(s, 'AWS::ApiGatewayV2::Integration');
    const nameOfFunction = new Map(
      Object.entries(s.model.functions).map(([name, fn]) => [fn.function, name]),
    );
    const deployed = routes.map((route) => {
      const integrationId = route.Properties.Target['Fn::Join'][1][1].Ref as string;
      const integration = integrations[integrationId]?.Properties;
      expect(integration?.PayloadFormatVersion).toBe('2.0');
      const fnId = integration?.IntegrationUri['Fn::GetAtt'][0] as string;
      return `${route.Properties.RouteKey} → ${nameOfFunction.get(fnId)}`;
    });
    const local = [
      ...stackRoutes.map((route) => `${route.routeKey} → ${route.target.name}`),
      `${DEFAULT_ROUTE_KEY} → ${routeNotFound.name}`,
    ];
    expect(deployed.sort()).toEqual(local.sort());
    // Every operation: its path without the trailing slash, and the greedy twin that catches it.
    expect(deployed).toContain('POST /v1/subscriptions → create-subscription');
    expect(deployed).toContain('POST /v1/subscriptions/{proxy+} → create-subscription');
    expect(deployed.every((route) => !/ \S*\/ →/.test(route))).toBe(true);
  });

  it("answers CORS preflights at the gateway with the stack's policy: no credentials", () => {
    const cors = corsPolicy(['*']);
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      CorsConfiguration: {
        AllowOrigins: ['*'],
        AllowMethods: [...cors.allowMethods],
        AllowHeaders: [...cors.allowHeaders],
        ExposeHeaders: [...cors.exposeHeaders],
        MaxAge: cors.maxAgeSeconds,
        AllowCredentials: false,
      },
    });
  });

  it('generates the webhook key set in the shape the keyring reads, kept in prod, and grants it by ARN only to the functions that need it', () => {
    const keySetId = s.model.ids.webhookKeySet;
    const secret = resources(s, 'AWS::SecretsManager::Secret')[keySetId];
    expect(secret?.Properties.GenerateSecretString).toEqual({
      SecretStringTemplate: '{"current":"k1"}',
      GenerateStringKey: 'k1',
      PasswordLength: 64,
      ExcludePunctuation: true,
      IncludeSpace: false,
    });
    expect(secret?.DeletionPolicy).toBe(s.model.stage === 'prod' ? 'Retain' : 'Delete');
    expect(secret?.Properties.Name).toBe(`CommerceApi-${s.model.stage}/webhook-key-set`);
    // Its ARN with the six random characters Secrets Manager appends, and nothing wider.
    const arnPattern = s.model.resolved.webhookKeySetArnPattern;
    expect(JSON.stringify(arnPattern)).toMatch(
      new RegExp(`:secretsmanager:.*:secret:CommerceApi-${s.model.stage}/webhook-key-set-\\?{6}"`),
    );
    expect(JSON.stringify(arnPattern)).not.toContain('*');
    expect(Object.keys(resources(s, 'AWS::SecretsManager::Secret'))).toEqual([keySetId]);
    for (const name of Object.keys(s.model.functions)) {
      const secretStatements = statementsOf(s, name).filter((statement) =>
        actionsOf([statement]).some((action) => action.startsWith('secretsmanager:')),
      );
      const needs = usesWebhookKeySet(name);
      expect(secretStatements, name).toEqual(
        needs
          ? [
              expect.objectContaining({
                Action: 'secretsmanager:GetSecretValue',
                Resource: arnPattern,
              }),
            ]
          : [],
      );
    }
    expect(Object.keys(s.model.functions).filter(usesWebhookKeySet).sort()).toEqual([
      'create-webhook-endpoint',
      'get-webhook-endpoint',
      'list-webhook-endpoints',
      'reset-webhook-endpoint-secret',
      'update-webhook-endpoint',
      // Opens the secrets to sign deliveries.
      'webhook-deliverer',
    ]);
  });

  it('seals the key set with a customer-managed KMS key: rotation on, kept in prod, a key policy that leaves use to IAM', () => {
    // The stack's other KMS keys sign ID Tokens (asymmetric: below).
    const keys = Object.entries(resources(s, 'AWS::KMS::Key')).filter(([id]) =>
      id.startsWith('WebhookKeySetKey'),
    );
    expect(keys).toHaveLength(1);
    const [keyId, key] = keys[0] as [string, Resource];
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.Properties.KeySpec ?? 'SYMMETRIC_DEFAULT').toBe('SYMMETRIC_DEFAULT');
    expect(key.DeletionPolicy).toBe(s.model.stage === 'prod' ? 'Retain' : 'Delete');
    const secret = resources(s, 'AWS::SecretsManager::Secret')[s.model.ids.webhookKeySet];
    expect(secret?.Properties.KmsKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    // The key policy names this account only (root: IAM policies decide who in it) and never anyone
    // at large; what CDK adds for the secret holds only through Secrets Manager.
    const statements = key.Properties.KeyPolicy.Statement as (Statement & {
      Principal: Json;
      Effect: string;
    })[];
    for (const statement of statements) {
      expect(statement.Effect).toBe('Allow');
      expect(JSON.stringify(statement.Principal)).toMatch(/:iam::.*:root/);
      expect(JSON.stringify(statement.Principal)).not.toBe('"*"');
    }
    const viaService = statements.filter((statement) =>
      JSON.stringify(statement.Condition ?? {}).includes('kms:ViaService'),
    );
    expect(viaService).toHaveLength(1);
    for (const statement of viaService) {
      expect(JSON.stringify(statement.Condition)).toMatch(/secretsmanager\./);
    }
  });

  it('grants kms:Decrypt on that key, through Secrets Manager only, to the key set readers alone; no function encrypts', () => {
    const [keyId] = Object.keys(resources(s, 'AWS::KMS::Key')).filter((id) =>
      id.startsWith('WebhookKeySetKey'),
    );
    for (const name of Object.keys(s.model.functions)) {
      // The ID Token keys' grants (kms:Sign, kms:GetPublicKey) are checked below.
      const kms = statementsOf(s, name).filter((statement) =>
        actionsOf([statement]).some((action) => /^kms:(?!Sign$|GetPublicKey$)/.test(action)),
      );
      expect(kms, name).toEqual(
        usesWebhookKeySet(name)
          ? [
              expect.objectContaining({
                Action: 'kms:Decrypt',
                Resource: { 'Fn::GetAtt': [keyId, 'Arn'] },
                Condition: {
                  StringEquals: {
                    'kms:ViaService': {
                      'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']],
                    },
                  },
                },
              }),
            ]
          : [],
      );
    }
    // No role of the stack may encrypt with it or generate data keys: only an operator writes the key set.
    const everyAction = Object.values(resources(s, 'AWS::IAM::Policy')).flatMap((policy) =>
      actionsOf(policy.Properties.PolicyDocument.Statement as Statement[]),
    );
    expect(
      everyAction.filter((action) => /^kms:(Encrypt|GenerateDataKey|ReEncrypt|\*)/.test(action)),
    ).toEqual([]);
  });

  it('throttles the default stage', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingBurstLimit: STAGE_THROTTLE.burstLimit,
        ThrottlingRateLimit: STAGE_THROTTLE.rateLimit,
      },
    });
  });

  it('builds the table from tableDefinition', () => {
    s.template.resourceCountIs('AWS::DynamoDB::Table', 1);
    const [table] = Object.values(resources(s, 'AWS::DynamoDB::Table'));
    expect(table?.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: keySchema(tableDefinition.partitionKey, tableDefinition.sortKey),
      TimeToLiveSpecification: { AttributeName: tableDefinition.timeToLiveAttribute, Enabled: true },
    });
    expect(table?.Properties.GlobalSecondaryIndexes).toEqual(indexesOfKind('global'));
    // No local index: an LSI caps every partition key's item collection at 10 GB.
    expect(indexesOfKind('local')).toEqual([]);
    expect(table?.Properties.LocalSecondaryIndexes).toBeUndefined();
  });

  it.each(operations.map((op) => [op.name, op] as const))(
    "writes %s's grants as statements: same actions, resources and leading keys, nothing more",
    (name, op) => {
      // Compared as (action, resource, leading-key pattern) triples, whatever statements CDK merges.
      // Whether these grants are enough and all needed is proven by running the code under them
      // (test/integration/iam.test.ts); this checks the stack writes them as declared.
      const tableArn = JSON.stringify(s.model.resolved.tableArn);
      const indexArn = (index: string) => JSON.stringify(s.model.resolved.indexArns[index]);
      const declared = (op.access as readonly TableGrant[]).flatMap((grant) =>
        grant.actions.flatMap((action) =>
          (grant.indexes ? grant.indexes.map(indexArn) : [tableArn]).flatMap((resource) =>
            grant.leadingKeys.map((key) => `${action} ${resource} ${leadingKeyPattern(key)}`),
          ),
        ),
      );
      const statements = statementsOf(s, name);
      const tableStatements = statements.filter((st) =>
        asArray(st.Action).some((a) => a.startsWith('dynamodb:')),
      );
      const written = tableStatements.flatMap((statement) => {
        expect(Object.keys(statement.Condition as object)).toEqual(['ForAllValues:StringLike']);
        const keys = (statement.Condition as Json)['ForAllValues:StringLike']['dynamodb:LeadingKeys'];
        return asArray(statement.Action).flatMap((action) =>
          asArray(statement.Resource as Json).flatMap((resource) =>
            asArray<string>(keys).map((key) => `${action} ${JSON.stringify(resource)} ${key}`),
          ),
        );
      });
      expect([...new Set(written)].sort()).toEqual([...new Set(declared)].sort());

      // Anything else is logging, only into the function's own log group, X-Ray's two actions
      // (which take no resource-level permission), and for the functions that seal or open webhook
      // secrets the key set (its own test, below). No operation sends to the delivery queue (what
      // one queues, Redeliver's round, leaves through the table's stream): no `sqs:` action.
      const logGroupId = idsOf(s, name).logGroup;
      const others = statements.filter((st) => !tableStatements.includes(st));
      const signs = op.name === 'request-token';
      expect(others).toHaveLength(2 + ('webhookKeySet' in op ? 2 : 0) + (signs ? 1 : 0));
      for (const statement of others) {
        if (asArray(statement.Action).includes('kms:Sign')) {
          // The token endpoint signs ID Tokens with the current key, and may do nothing else with it.
          expect(signs).toBe(true);
          expect(statement.Action).toBe('kms:Sign');
          expect(statement.Resource).toEqual(keyArn(s, 1));
          continue;
        }
        if (asArray(statement.Action).some((action) => /^(secretsmanager|kms):/.test(action))) continue;
        if (asArray(statement.Action).some((action) => action.startsWith('xray:'))) {
          expect(asArray(statement.Action).sort()).toEqual(XRAY_ACTIONS);
          expect(statement.Resource).toBe('*');
        } else {
          expect(asArray(statement.Action).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
          expect(statement.Resource).toEqual({ 'Fn::GetAtt': [logGroupId, 'Arn'] });
        }
      }
    },
  );

  it.each([routeNotFound.name, oauthDiscovery.name])(
    'gives %s its own log group and nothing else (discovery: the public halves of the ID Token keys)',
    (name) => {
      const statements = statementsOf(s, name);
      expect(tableActionsOf(statements)).toEqual([]);
      const publishes = name === oauthDiscovery.name;
      expect(actionsOf(statements).sort()).toEqual([
        ...(publishes ? ['kms:GetPublicKey'] : []),
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        ...XRAY_ACTIONS,
      ]);
      if (publishes) {
        const kms = statements.filter((st) => asArray(st.Action).includes('kms:GetPublicKey'));
        expect(kms.map((st) => st.Resource)).toEqual([keyArn(s, 1)]);
      }
    },
  );

  it('has one ID Token key: KMS, RSA 2048, sign and verify only, and no other function may use it', () => {
    // Beside the webhook key set's symmetric key (above).
    const keys = resources(s, 'AWS::KMS::Key');
    expect(Object.keys(keys).filter((id) => !id.startsWith('WebhookKeySetKey'))).toEqual([keyId(s, 1)]);
    expect(keys[keyId(s, 1)]?.Properties).toMatchObject({ KeySpec: 'RSA_2048', KeyUsage: 'SIGN_VERIFY' });
    const discovery = resources(s, 'AWS::Lambda::Function')[idsOf(s, oauthDiscovery.name).function];
    expect(discovery?.Properties.Environment.Variables).toMatchObject({
      ISSUER_URL: defaultIssuer(s),
      ID_TOKEN_PUBLISHED_KEY_ARNS: keyArn(s, 1),
    });
    for (const name of Object.keys(s.model.functions)) {
      const kms = actionsOf(statementsOf(s, name)).filter((action) =>
        /^kms:(Sign|GetPublicKey)$/.test(action),
      );
      const expected =
        name === 'request-token' ? ['kms:Sign'] : name === oauthDiscovery.name ? ['kms:GetPublicKey'] : [];
      expect(kms, name).toEqual(expected);
    }
  });

  it('gives list-wallets no write action (but to its request quota counters)', () => {
    const quotaOnly = (statement: { Condition?: unknown }) =>
      JSON.stringify(statement.Condition ?? {}).includes('"QUOTA#*"') &&
      !JSON.stringify(statement.Condition ?? {}).match(/"(?!QUOTA#)[A-Z-]+#\*"/);
    const actions = actionsOf(statementsOf(s, 'list-wallets').filter((statement) => !quotaOnly(statement)));
    for (const write of ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']) {
      expect(actions).not.toContain(`dynamodb:${write}`);
    }
    expect(actions.some((action) => action === 'dynamodb:*')).toBe(false);
  });

  it('gives delete-webhook-endpoint no Query but of its list count (the cap seed), and no index', () => {
    const statements = statementsOf(s, 'delete-webhook-endpoint');
    for (const statement of statements.filter((st) => actionsOf([st]).includes('dynamodb:Query'))) {
      expect(JSON.stringify(statement.Condition)).toContain('LIST#WEBHOOK#*');
      expect(JSON.stringify(statement.Condition)).not.toMatch(/"(?!LIST#WEBHOOK#)[A-Z-]+#\*"/);
    }
    expect(JSON.stringify(statements)).not.toContain('/index/');
  });

  it('uses no AWS managed policy', () => {
    for (const role of Object.values(resources(s, 'AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('writes one JSON access-log line per request, without any header, to its own log group', () => {
    const accessLogsId = s.model.ids.accessLogs;
    const [stage] = Object.values(resources(s, 'AWS::ApiGatewayV2::Stage'));
    const settings = stage?.Properties.AccessLogSettings;
    expect(settings.DestinationArn).toEqual({ 'Fn::GetAtt': [accessLogsId, 'Arn'] });
    const format = JSON.parse(settings.Format);
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      routeKey: '$context.routeKey',
      status: '$context.status',
      integrationError: '$context.integrationErrorMessage',
    });
    expect(settings.Format).not.toMatch(/header|authorizer/i);
  });

  it('outputs the API URL and table name and tags resources with stage and branch', () => {
    // Prod: the front door's URL; a preview: the HTTP API's.
    const api = s.template.toJSON().Outputs.ApiUrl.Value;
    expect(JSON.stringify(api)).toContain(
      s.model.stage === 'prod' ? 'DomainName' : JSON.stringify({ Ref: s.model.ids.api }),
    );
    s.template.hasOutput('TableName', { Value: { Ref: s.model.ids.table } });
    s.template.hasResourceProperties('AWS::DynamoDB::Table', {
      Tags: Match.arrayWith([
        { Key: 'branch', Value: 'feature/test' },
        { Key: 'stage', Value: s.model.stackName.replace('CommerceApi-', '') },
      ]),
    });
  });
});

describe('prod', () => {
  it('keeps the table: retained, point-in-time recovery, deletion protection', () => {
    prod.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      }),
    });
  });

  it('retains function and API access logs for a month', () => {
    const logGroups = Object.values(resources(prod, 'AWS::Logs::LogGroup'));
    // One per function, the $default route's included, and the API's access logs.
    expect(logGroups).toHaveLength(FUNCTION_COUNT + 1);
    for (const group of logGroups) {
      expect(group.Properties.RetentionInDays).toBe(30);
      expect(group.DeletionPolicy).toBe('Retain');
    }
  });

  it("keeps the alarms per function in a nested stack, fed the names it watches as parameters, none of the API's", () => {
    // The API's 5xx alarm and the dashboard stay: moto, the rehearsal's CloudFormation, cannot resolve a
    // reference to an HTTP API, and a nested stack's parameters must all resolve. So do the webhook
    // pipeline's three that watch a queue (its dead-letter queues and the delivery queue's oldest
    // message: "the webhook pipeline", below); its failure rate and the relay's and the meter
    // aggregator's iterator ages are nested.
    prod.template.resourceCountIs('AWS::CloudWatch::Alarm', 1 + 3);
    prod.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    prod.template.resourceCountIs('AWS::CloudFormation::Stack', 1);
    expect(JSON.stringify(monitoringParameters())).not.toContain(prod.model.ids.api);
    // Every parameter the nested template declares is one the parent passes.
    expect(Object.keys(monitoringParameters()).sort()).toEqual(
      Object.keys(monitoring.toJSON().Parameters ?? {}).sort(),
    );
  });

  it('every alarm, in the stack and in the nested one, notifies the alarm topic when it fires and when it recovers', () => {
    const topicId = prod.model.ids.alarmTopic;
    // The nested stack receives the topic's ARN as a parameter: each of its alarms names that parameter.
    const [topicParameter] = Object.entries(monitoringParameters()).filter(
      ([, value]) => JSON.stringify(value) === JSON.stringify({ Ref: topicId }),
    );
    expect(topicParameter).toBeDefined();
    const alarms = [
      ...Object.values(prod.template.findResources('AWS::CloudWatch::Alarm')).map((alarm) => ({
        alarm,
        topic: { Ref: topicId },
      })),
      ...Object.values(monitoring.findResources('AWS::CloudWatch::Alarm')).map((alarm) => ({
        alarm,
        topic: { Ref: topicParameter?.[0] },
      })),
    ];
    expect(alarms.length).toBeGreaterThan(3 * operations.length);
    for (const { alarm, topic } of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([topic]);
      expect(alarm.Properties.OKActions).toEqual([topic]);
    }
    prod.template.hasOutput('AlarmTopicArn', { Value: { Ref: topicId } });
  });

  it('the alarm topic takes CloudWatch alarms of this account only, over TLS only, and mails no one unless told', () => {
    prod.template.resourceCountIs('AWS::SNS::Topic', 1);
    prod.template.hasResourceProperties('AWS::SNS::Topic', { TopicName: 'commerce-api-prod-alarms' });
    prod.template.resourceCountIs('AWS::SNS::Subscription', 0);
    const [policy, ...others] = Object.values(resources(prod, 'AWS::SNS::TopicPolicy')) as Resource[];
    expect(others).toEqual([]);
    const statements = (policy as Resource).Properties.PolicyDocument as Json as {
      Statement: Record<string, Json>[];
    };
    expect(statements.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Effect: 'Allow',
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: 'sns:Publish',
          Condition: expect.objectContaining({
            StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
          }),
        }),
        expect.objectContaining({
          Effect: 'Deny',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      ]),
    );
    expect(statements.Statement.filter((statement) => statement.Effect === 'Allow')).toHaveLength(1);
  });

  it('alarms on API 5xx and on throttles of every function of the API and the schedules', () => {
    // The webhook pipeline's backlog is watched by its own alarms (dead letters, failure rate).
    const functions = [...prod.model.httpFunctions, ...prod.model.scheduledFunctions];
    prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
    });
    const watched = throttleAlarmFunctions();
    for (const fn of functions) expect(watched).toContainEqual({ Ref: idsOf(prod, fn).function });
    expect(watched).toHaveLength(functions.length);
  });

  it("alarms per operation on p99 latency and 5xx rate, from the requests' own metrics, and on table throttles", () => {
    const names = prod.model.httpFunctions;
    // One throttle alarm per function, latency and error rate per operation, table throttles; a
    // scheduled function: its throttles and its failed runs; the clock's isolated failures
    // (test/infra/clock-alarm.test.ts); the webhook pipeline's failure rate and the relay's and the
    // meter aggregator's iterator ages. (The API's 5xx alarm and the webhook pipeline's three on
    // queues are the parent's: "the webhook pipeline", below.)
    monitoring.resourceCountIs(
      'AWS::CloudWatch::Alarm',
      names.length * 3 + 1 + scheduledFunctions.length * 2 + 1 + 3,
    );
    for (const operation of names) {
      monitoring.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Threshold: 2000,
        DatapointsToAlarm: 3,
        EvaluationPeriods: 5,
        Metrics: [
          Match.objectLike({
            MetricStat: Match.objectLike({
              Stat: 'p99',
              Metric: Match.objectLike({
                MetricName: 'Latency',
                Namespace: 'CommerceApi/prod',
                Dimensions: Match.arrayWith([{ Name: 'operation', Value: operation }]),
              }),
            }),
          }),
        ],
      });
      monitoring.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Threshold: 1,
        Metrics: Match.arrayWith([
          Match.objectLike({
            MetricStat: Match.objectLike({
              Metric: Match.objectLike({
                MetricName: 'Errors5xx',
                Namespace: 'CommerceApi/prod',
                Dimensions: Match.arrayWith([{ Name: 'operation', Value: operation }]),
              }),
            }),
          }),
        ]),
      });
    }
    monitoring.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ Namespace: 'AWS/DynamoDB', MetricName: 'ThrottledRequests' }),
          }),
        }),
      ]),
    });
  });

  it('has a dashboard: latency p99 and 5xx rate per operation, throttles, DynamoDB capacity and throttles, webhook DLQ depth and deliveries', () => {
    const dashboards = Object.values(prod.template.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    // CloudFormation refuses Tags on a dashboard (cfn-lint E3002): the stage tags skip it.
    expect((dashboards[0] as Resource).Properties.Tags).toBeUndefined();
    const body = JSON.stringify((dashboards[0] as Resource).Properties.DashboardBody);
    for (const title of [
      'Latency p99 per operation',
      '5xx rate per operation',
      'Lambda throttles per function',
      'DynamoDB consumed capacity',
      'DynamoDB throttled requests',
    ]) {
      expect(body).toContain(title);
    }
    for (const operation of prod.model.httpFunctions) {
      expect(body).toContain(`\\"operation\\",\\"${operation}\\"`);
    }
    expect(body).toContain('ConsumedReadCapacityUnits');
    expect(body).toContain('ConsumedWriteCapacityUnits');
    // The webhook pipeline: both dead-letter queues' depth, and the deliverer's metrics.
    expect(body).toContain('Webhook dead-letter queues (messages)');
    for (const queue of [prod.model.ids.deadLetterQueue, prod.model.ids.relayFailures]) {
      expect(body).toContain(queue);
    }
    for (const metric of [
      'DeliveryAttempts',
      'DeliveryFailures',
      'WebhookDeliveriesSucceeded',
      'WebhookDeliveriesFailed',
      'WebhookEndpointsDisabled',
    ]) {
      expect(body).toContain(`\\"${metric}\\"`);
    }
  });

  it('bundles each handler locally as ESM and records asset metadata for SAM', () => {
    for (const fn of Object.values(resources(prod, 'AWS::Lambda::Function'))) {
      expect(fn.Metadata).toMatchObject({ 'aws:asset:property': 'Code', 'aws:asset:is-bundled': true });
      const assetPath = fn.Metadata['aws:asset:path'] as string;
      expect(existsSync(path.join(prod.model.outdir, assetPath, 'index.mjs'))).toBe(true);
      expect(fn.Properties.Handler).toBe('index.handler');
    }
  });
});

describe('preview', () => {
  it('lets the table go with the stack', () => {
    preview.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      UpdateReplacePolicy: 'Delete',
    });
    const [table] = Object.values(resources(preview, 'AWS::DynamoDB::Table'));
    expect(table?.Properties.DeletionProtectionEnabled ?? false).toBe(false);
    expect(table?.Properties.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled ?? false).toBe(
      false,
    );
  });

  it('retains function and API access logs for a week and deletes them with the stack', () => {
    const logGroups = Object.values(resources(preview, 'AWS::Logs::LogGroup'));
    expect(logGroups).toHaveLength(FUNCTION_COUNT + 1);
    for (const group of logGroups) {
      expect(group.Properties.RetentionInDays).toBe(7);
      expect(group.DeletionPolicy).toBe('Delete');
    }
  });

  it('has no dashboard', () => {
    preview.template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
  });

  it('has no alarms', () => {
    preview.template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    preview.template.resourceCountIs('AWS::SNS::Topic', 0);
  });
});

describe('stage selection: cdk -c stage=<stage> -c branch=<branch>', () => {
  const fromContext = (context: Record<string, string>) => {
    const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context } });
    const stack = createStageStack(app);
    return { app, stack, template: Template.fromStack(stack) };
  };
  /**
   * The shared stages stand for the context they were synthesised with (prod: none but a branch, which
   * none of these read; preview: `-c stage=pr-42 -c branch=feature/test`): no synth of their own.
   */
  const templateOf = (context: Record<string, string> | Template) =>
    context instanceof Template ? context : synthOf(context).template;
  /**
   * Three contexts carry every setting these tests synthesise for (ten synths of their own took a
   * third of this file's time). Settings of different names shape different properties, and each test
   * reads only its own: one context per combination of stage and per-stage form is enough.
   */
  const contexts = {
    /** No stage given (prod), each setting for every stage. */
    prod: {
      alarmEmail: 'ops@example.com, oncall@example.com',
      corsAllowOrigins: 'https://shop.example.com, https://b.example',
    },
    /** Prod with a setting for prod over the one for every stage, and one for another stage only. */
    prodPerStage: {
      alarmEmail: 'all@example.com',
      'alarmEmail:prod': 'prod@example.com',
      'tracing:pr-3': 'false',
    },
    /** A preview stage whose settings of its own win over the ones for every stage. */
    preview: {
      stage: 'pr-7',
      'corsAllowOrigins:pr-7': 'http://localhost:5173',
      corsAllowOrigins: 'https://shop.example.com',
      'logLevel:pr-7': 'debug',
      logLevel: 'warn',
      'issuer:pr-7': 'https://api.example.com/',
      'idTokenKeyGeneration:pr-7': '3',
      'tracing:pr-7': 'false',
      tagKmsKeys: 'false',
    },
  };
  const synthesised = new Map<Record<string, string>, ReturnType<typeof fromContext>>();
  /** One synth per context object, whichever tests read it. */
  const synthOf = (context: Record<string, string>) => {
    let found = synthesised.get(context);
    if (!found) {
      found = fromContext(context);
      synthesised.set(context, found);
    }
    return found;
  };
  const tagsOf = (template: Template) =>
    (Object.values(template.findResources('AWS::DynamoDB::Table'))[0] as Resource).Properties.Tags as {
      Key: string;
      Value: string;
    }[];

  it('deploys CommerceApi-prod, the production stage, when no stage is given', () => {
    const { app, stack, template } = synthOf(contexts.prod);
    expect(app.node.children.filter((child) => child instanceof CommerceApiStack)).toEqual([stack]);
    expect(stack.stackName).toBe('CommerceApi-prod');
    expect(tagsOf(template)).toEqual([{ Key: 'stage', Value: 'prod' }]);
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });

  it('deploys one stack per preview stage, tagged with its stage and branch', () => {
    const { model, template } = preview;
    expect(model.stackName).toBe('CommerceApi-pr-42');
    expect(tagsOf(template)).toEqual(
      expect.arrayContaining([
        { Key: 'stage', Value: 'pr-42' },
        { Key: 'branch', Value: 'feature/test' },
      ]),
    );
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { Name: 'commerce-api-pr-42' });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
  });

  it('mails the alarm topic to the addresses the context gives, per stage or for every stage', () => {
    const mailed = (context: Record<string, string> | Template) =>
      Object.values(templateOf(context).findResources('AWS::SNS::Subscription')).map((subscription) => [
        subscription.Properties.Protocol,
        subscription.Properties.Endpoint,
      ]);
    expect(mailed(prod.template)).toEqual([]);
    expect(mailed(contexts.prod)).toEqual([
      ['email', 'ops@example.com'],
      ['email', 'oncall@example.com'],
    ]);
    expect(mailed(contexts.prodPerStage)).toEqual([['email', 'prod@example.com']]);
    expect(() => fromContext({ alarmEmail: 'ops@example.com,not an address' })).toThrow(
      /alarmEmail: not an e-mail address: not an address/,
    );
  });

  it('takes the allowed CORS origins from the context, per stage or for every stage', () => {
    const originsOf = (context: Record<string, string> | Template) =>
      (Object.values(templateOf(context).findResources('AWS::ApiGatewayV2::Api'))[0] as Resource).Properties
        .CorsConfiguration.AllowOrigins;
    expect(originsOf(prod.template)).toEqual(['*']);
    expect(originsOf(contexts.prod)).toEqual(['https://shop.example.com', 'https://b.example']);
    expect(originsOf(contexts.preview)).toEqual(['http://localhost:5173']);
    expect(() => fromContext({ corsAllowOrigins: 'https://shop.example.com/path' })).toThrow(/not an origin/);
    expect(() => fromContext({ corsAllowOrigins: '*,https://a.example' })).toThrow(/cannot be combined/);
  });

  it("gives every function its stage's metrics namespace and the log level from the context", () => {
    const variablesOf = (context: Record<string, string> | Template) =>
      Object.values(templateOf(context).findResources('AWS::Lambda::Function')).map(
        (fn) => (fn as Resource).Properties.Environment.Variables,
      );
    const prodVariables = variablesOf(prod.template);
    expect(prodVariables).toHaveLength(FUNCTION_COUNT);
    for (const variables of prodVariables) {
      expect(variables).toMatchObject({ METRICS_NAMESPACE: 'CommerceApi/prod', LOG_LEVEL: 'info' });
    }
    for (const variables of variablesOf(contexts.preview)) {
      expect(variables).toMatchObject({ METRICS_NAMESPACE: 'CommerceApi/pr-7', LOG_LEVEL: 'debug' });
    }
    expect(() => fromContext({ logLevel: 'verbose' })).toThrow(/logLevel must be one of/);
  });

  it('gives the functions the issuer of the context (the custom domain), and rotates the ID Token key by generation', () => {
    const { template } = synthOf(contexts.preview);
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Resource[];
    // Every function is told its stage's issuer.
    expect(functions).toHaveLength(FUNCTION_COUNT);
    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.ISSUER_URL).toBe('https://api.example.com');
    }
    // Generation 3 signs; 2 is still published; 1 is gone.
    const t = { template };
    expect(
      Object.keys(template.findResources('AWS::KMS::Key'))
        .filter((id) => id.startsWith('IdTokenKey'))
        .sort(),
    ).toEqual([keyId(t, 2), keyId(t, 3)].sort());
    const variables = functions.map((fn) => fn.Properties.Environment.Variables);
    expect(
      variables.filter((v) => v.ID_TOKEN_SIGNING_KEY_ARN).map((v) => v.ID_TOKEN_SIGNING_KEY_ARN),
    ).toEqual([keyArn(t, 3)]);
    expect(
      variables.filter((v) => v.ID_TOKEN_PUBLISHED_KEY_ARNS).map((v) => v.ID_TOKEN_PUBLISHED_KEY_ARNS),
    ).toEqual([{ 'Fn::Join': ['', [keyArn(t, 3), ',', keyArn(t, 2)]] }]);
    expect(() => fromContext({ issuer: 'http://api.example.com' })).toThrow(/issuer must be an https URL/);
    expect(() => fromContext({ issuer: 'https://api.example.com/?x=1' })).toThrow(/query or fragment/);
    expect(() => fromContext({ idTokenKeyGeneration: '0' })).toThrow(/idTokenKeyGeneration/);
  });

  it('traces every function with X-Ray unless the context turns it off for a stage', () => {
    const tracingOf = (context: Record<string, string> | Template) =>
      Object.values(templateOf(context).findResources('AWS::Lambda::Function')).map(
        (fn) => (fn as Resource).Properties.TracingConfig,
      );
    expect(tracingOf(prod.template)).toHaveLength(FUNCTION_COUNT);
    for (const config of tracingOf(prod.template)) expect(config).toEqual({ Mode: 'Active' });
    for (const config of tracingOf(contexts.preview)) expect(config).toBeUndefined();
    for (const config of tracingOf(contexts.prodPerStage)) expect(config).toEqual({ Mode: 'Active' });
    expect(() => fromContext({ tracing: 'maybe' })).toThrow(/tracing must be true or false/);
  });

  it('tags every taggable resource, not only the table', () => {
    const { template } = preview;
    const tagged = ['AWS::Lambda::Function', 'AWS::IAM::Role', 'AWS::Logs::LogGroup'];
    for (const type of tagged) {
      for (const resource of Object.values(template.findResources(type)) as Resource[]) {
        expect(resource.Properties.Tags, type).toEqual(
          expect.arrayContaining([{ Key: 'stage', Value: 'pr-42' }]),
        );
      }
    }
    // The KMS keys too, unless the deploy rehearsal turns it off (moto 5.2 fails on a key with Tags).
    const keyTags = (t: Template) =>
      (Object.values(t.findResources('AWS::KMS::Key')) as Resource[]).map((key) => key.Properties.Tags);
    expect(keyTags(template).length).toBeGreaterThan(0);
    for (const tags of keyTags(template))
      expect(tags).toEqual(expect.arrayContaining([{ Key: 'stage', Value: 'pr-42' }]));
    for (const tags of keyTags(synthOf(contexts.preview).template)) expect(tags).toBeUndefined();
    expect(() => fromContext({ tagKmsKeys: 'maybe' })).toThrow(/tagKmsKeys must be true or false/);
    const [api] = Object.values(template.findResources('AWS::ApiGatewayV2::Api')) as Resource[];
    expect(api?.Properties.Tags).toMatchObject({ stage: 'pr-42', branch: 'feature/test' });
  });
});

describe('moving a stack off the retired local indexes: cdk -c legacyTable=serve', () => {
  const serving = (() => {
    const app = new App({
      context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], stage: 'pr-7', legacyTable: 'serve' },
    });
    return Template.fromStack(createStageStack(app));
  })();
  const tables = serving.findResources('AWS::DynamoDB::Table');
  const legacy = tables[LEGACY_TABLE_LOGICAL_ID] as Resource;
  const [targetId, target] = Object.entries(tables).find(([id]) => id.startsWith('DataTable')) as [
    string,
    Resource,
  ];

  it('keeps the old table under its logical id, with its five local indexes and its stream, and serves the functions from it', () => {
    expect(Object.keys(tables)).toHaveLength(2);
    expect(legacy.Properties.LocalSecondaryIndexes).toEqual(
      (legacyTableDefinition.indexes as readonly IndexDefinition[])
        .filter((index) => index.kind === 'local')
        .map((index) => ({
          IndexName: index.name,
          KeySchema: keySchema(index.partitionKey, index.sortKey),
          Projection: { ProjectionType: 'ALL' },
        })),
    );
    expect(legacy.Properties.StreamSpecification).toEqual({ StreamViewType: tableDefinition.streamViewType });
    const names = Object.values(serving.findResources('AWS::Lambda::Function')).flatMap((fn) => {
      const name = (fn as Resource).Properties.Environment?.Variables?.TABLE_NAME;
      return name ? [name] : [];
    });
    expect(names.length).toBeGreaterThan(10);
    expect(new Set(names.map((name) => JSON.stringify(name)))).toEqual(
      new Set([JSON.stringify({ Ref: LEGACY_TABLE_LOGICAL_ID })]),
    );
    serving.hasOutput('TableName', { Value: { Ref: LEGACY_TABLE_LOGICAL_ID } });
  });

  it('creates the new table beside it, without local index and without a stream until the switch', () => {
    expect(target.Properties.LocalSecondaryIndexes).toBeUndefined();
    expect(target.Properties.StreamSpecification).toBeUndefined();
    expect(target.Properties.KeySchema).toEqual(
      keySchema(tableDefinition.partitionKey, tableDefinition.sortKey),
    );
    serving.hasOutput('MigrationTableName', { Value: { Ref: targetId } });
    // Only the old table's stream feeds the relay and the meter aggregator.
    const sources = Object.values(serving.findResources('AWS::Lambda::EventSourceMapping'))
      .map((mapping) => JSON.stringify((mapping as Resource).Properties.EventSourceArn))
      .filter((arn) => arn?.includes('StreamArn'));
    expect(sources).toEqual(
      [1, 2].map(() => JSON.stringify({ 'Fn::GetAtt': [LEGACY_TABLE_LOGICAL_ID, 'StreamArn'] })),
    );
  });

  it('without it (the switch, and every new stack): DataTable only, streamed, feeding the relay', () => {
    const { ids } = prod.model;
    expect(ids.table.startsWith('DataTable')).toBe(true);
    expect(Object.keys(prod.template.findResources('AWS::DynamoDB::Table'))).toEqual([ids.table]);
    expect(Object.keys(prod.template.findResources('AWS::DynamoDB::Table'))).not.toContain(
      LEGACY_TABLE_LOGICAL_ID,
    );
  });

  it('refuses any other value', () => {
    const app = new App({
      context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], legacyTable: 'yes' },
    });
    expect(() => createStageStack(app)).toThrow(/legacyTable must be serve/);
  });
});

describe('the webhook pipeline (prod)', () => {
  it("the relay reads the table's stream only: its stream actions on the stream ARN, ListStreams alone on *", () => {
    const stream = { 'Fn::GetAtt': [prod.model.ids.table, 'StreamArn'] };
    const statements = statementsOf(prod, 'webhook-relay');
    const reads = statements.filter((st) => asArray(st.Action).includes('dynamodb:GetRecords'));
    expect(reads).toHaveLength(1);
    expect(asArray(reads[0]?.Action).sort()).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
    ]);
    expect(reads[0]?.Resource).toEqual(stream);
    const list = statements.filter((st) => asArray(st.Action).includes('dynamodb:ListStreams'));
    // CDK merges it with X-Ray's two actions, which take no resource-level permission either.
    expect(list.map((st) => [asArray(st.Action).sort(), st.Resource])).toEqual([
      [['dynamodb:ListStreams', ...XRAY_ACTIONS], '*'],
    ]);
  });

  it('maps the stream to the relay (outbox and Redeliver inserts, expired delivery entries, subscriptions created or changed; bisect, DLQ) and the queue to the deliverer', () => {
    const mappings = Object.values(resources(prod, 'AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(3);
    const relay = mappings.find(
      (m) =>
        JSON.stringify(m.Properties.FunctionName) ===
        JSON.stringify({ Ref: idsOf(prod, 'webhook-relay').function }),
    );
    expect(relay?.Properties).toMatchObject({
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      FunctionName: { Ref: idsOf(prod, 'webhook-relay').function },
    });
    const patterns = ((relay?.Properties.FilterCriteria?.Filters ?? []) as { Pattern: string }[]).map((f) =>
      JSON.parse(f.Pattern),
    );
    // Exactly the records `relayRecordKind` takes, no more (each costs an invocation), no fewer.
    const { outbox, redelivery, subscription } = relayStreamFilters;
    expect(patterns).toEqual([
      {
        eventName: [outbox.eventName],
        dynamodb: { Keys: { PK: { S: [{ prefix: outbox.partitionKeyPrefix }] } } },
      },
      ...[redelivery].map((filter) => ({
        eventName: [filter.eventName],
        dynamodb: {
          Keys: {
            PK: { S: [{ prefix: filter.partitionKeyPrefix }] },
            SK: { S: [{ prefix: filter.sortKeyPrefix }] },
          },
        },
      })),
      {
        eventName: [...subscription.eventNames],
        dynamodb: {
          Keys: {
            PK: { S: [{ prefix: subscription.partitionKeyPrefix }] },
            SK: { S: [{ prefix: subscription.sortKeyPrefix }] },
          },
        },
      },
    ]);
    const deliverer = mappings.find((m) => m.Properties.StartingPosition === undefined);
    expect(deliverer?.Properties).toMatchObject({
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 20 },
      FunctionName: { Ref: idsOf(prod, 'webhook-deliverer').function },
    });
  });

  it('maps the stream to the meter aggregator: usage-event inserts only, bisect, retries, the stream failure queue, a tumbling window for the shard id', () => {
    const mappings = Object.values(resources(prod, 'AWS::Lambda::EventSourceMapping'));
    const aggregator = mappings.find(
      (m) =>
        JSON.stringify(m.Properties.FunctionName) ===
        JSON.stringify({ Ref: idsOf(prod, 'meter-aggregator').function }),
    );
    expect(aggregator?.Properties).toMatchObject({
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: AGGREGATOR_BATCH_SIZE,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: AGGREGATOR_RETRY_ATTEMPTS,
      TumblingWindowInSeconds: AGGREGATOR_WINDOW_SECONDS,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [prod.model.ids.relayFailures, 'Arn'] } },
      },
    });
    const patterns = ((aggregator?.Properties.FilterCriteria?.Filters ?? []) as { Pattern: string }[]).map(
      (f) => JSON.parse(f.Pattern),
    );
    // Exactly the records `isAggregatorRecord` takes (the local poller's filter too).
    expect(patterns).toEqual([
      {
        eventName: [aggregatorStreamFilter.eventName],
        dynamodb: { Keys: { PK: { S: [{ prefix: aggregatorStreamFilter.partitionKeyPrefix }] } } },
      },
    ]);
    expect(
      resources(prod, 'AWS::Lambda::Function')[idsOf(prod, 'meter-aggregator').function]?.Properties.Timeout,
    ).toBe(AGGREGATOR_TIMEOUT_SECONDS);
  });

  it('alarms on either dead-letter queue holding a message and on the delivery failure rate', () => {
    const alarms = Object.values(resources(prod, 'AWS::CloudWatch::Alarm'));
    const onQueues = alarms.filter((a) => a.Properties.MetricName === 'ApproximateNumberOfMessagesVisible');
    expect(onQueues.map((a) => a.Properties.Dimensions[0].Value['Fn::GetAtt'][0]).sort()).toEqual(
      [prod.model.ids.deadLetterQueue, prod.model.ids.relayFailures].sort(),
    );
    // The failure rate names no queue nor function: it is nested (infra/webhooks.ts `createNestedAlarms`).
    expect(alarms.filter((a) => a.Properties.Metrics !== undefined)).toHaveLength(0);
    const nested = Object.values(monitoring.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    expect(
      nested.filter((a) =>
        String(a.Properties.AlarmDescription).includes('webhook delivery attempts failed'),
      ),
    ).toEqual([
      expect.objectContaining({ Properties: expect.objectContaining({ Metrics: expect.any(Array) }) }),
    ]);
  });

  it("alarms on the relay's stream iterator age and on the delivery queue's oldest message (a stalled pipeline)", () => {
    const alarms = Object.values(resources(prod, 'AWS::CloudWatch::Alarm'));
    expect(alarms.filter((a) => a.Properties.MetricName === 'IteratorAge')).toEqual([]);
    // Nested, the function named through the nested stack's parameters (as the throttle alarms).
    const iteratorAge = (Object.values(monitoring.findResources('AWS::CloudWatch::Alarm')) as Resource[])
      .filter((a) => a.Properties.MetricName === 'IteratorAge')
      .map((a) => {
        const [dimension] = a.Properties.Dimensions as { Name: string; Value: { Ref: string } }[];
        return { ...a.Properties, watched: monitoringParameters()[dimension?.Value.Ref ?? ''] };
      });
    const ages = (name: string) =>
      iteratorAge.filter(
        (a) => JSON.stringify(a.watched) === JSON.stringify({ Ref: idsOf(prod, name).function }),
      );
    expect(iteratorAge).toHaveLength(2);
    expect(ages('webhook-relay')).toEqual([
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 5,
        Threshold: RELAY_ITERATOR_AGE_ALARM_SECONDS * 1000,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      }),
    ]);
    expect(ages('meter-aggregator')).toEqual([
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 5,
        Threshold: AGGREGATOR_ITERATOR_AGE_ALARM_SECONDS * 1000,
        ComparisonOperator: 'GreaterThanThreshold',
      }),
    ]);
    const oldest = alarms.filter((a) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage');
    expect(oldest.map((a) => a.Properties)).toEqual([
      expect.objectContaining({
        Namespace: 'AWS/SQS',
        Dimensions: [
          { Name: 'QueueName', Value: { 'Fn::GetAtt': [prod.model.ids.deliveryQueue, 'QueueName'] } },
        ],
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 5,
        Threshold: DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      }),
    ]);
    // Above what messages waiting on purpose reach before SQS leaves them out of the metric (two
    // waits of an open circuit), below an hour.
    expect(DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS).toBeGreaterThan(2 * CIRCUIT_MAX_WAIT_SECONDS);
    expect(DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS).toBeLessThan(3600);
    // Neither exists outside prod, as the other alarms.
    const previewAlarms = Object.values(resources(preview, 'AWS::CloudWatch::Alarm'));
    expect(previewAlarms).toEqual([]);
  });
});
