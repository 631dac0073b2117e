import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { CommerceApiStack, createStageStack } from '../../infra/stack.ts';
import { tableDefinition } from '../../shared/data/table.ts';
import { type OperationName, operations } from '../../shared/operations.ts';

// The CLI feeds cdk.json's context (feature flags) to the app; tests must synthesise the same template.
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));

function synth(stage: string, options: { bundle: boolean }) {
  const app = new App({
    context: {
      ...cdkJson.context,
      // The CLI sets this by default; SAM (`sam local`, `sam build`) finds the code through it.
      'aws:cdk:enable-asset-metadata': true,
      // Bundling is real in one stage only: that proves esbuild works locally, the other saves time.
      ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
    },
  });
  const stack = new CommerceApiStack(app, `CommerceApi-${stage}`, { stage, branch: 'feature/test' });
  return { app, stack, template: Template.fromStack(stack) };
}

const prod = synth('prod', { bundle: true });
const preview = synth('pr-42', { bundle: false });

type Synth = typeof prod;
// biome-ignore lint/suspicious/noExplicitAny: template JSON is untyped; the assertions check its shape.
type Json = any;
type Resource = { Type: string; Properties: Record<string, Json>; DeletionPolicy?: string; Metadata?: Json };
type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };

/** Logical id of an L2 construct's CloudFormation resource. */
const logicalId = ({ stack }: Synth, construct: IConstruct) =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);
const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
const resources = ({ template }: Synth, type: string) =>
  template.findResources(type) as Record<string, Resource>;

/** Every statement of every policy attached to the operation's role. */
function statementsOf(s: Synth, operationName: OperationName): Statement[] {
  const roleRef = { Ref: logicalId(s, s.stack.functions[operationName].role) };
  return Object.values(resources(s, 'AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(JSON.stringify(roleRef)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

const actionsOf = (statements: Statement[]) => statements.flatMap((statement) => asArray(statement.Action));
const tableActionsOf = (statements: Statement[]) =>
  actionsOf(statements).filter((action) => action.startsWith('dynamodb:'));

const keySchema = (partitionKey: { name: string }, sortKey: { name: string }) => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' },
  { AttributeName: sortKey.name, KeyType: 'RANGE' },
];
const indexesOfKind = (kind: 'global' | 'local') =>
  tableDefinition.indexes
    .filter((index) => index.kind === kind)
    .map((index) => ({
      IndexName: index.name,
      KeySchema: keySchema(index.partitionKey, index.sortKey),
      Projection: { ProjectionType: 'ALL' },
    }));

describe.each([
  ['prod', prod],
  ['preview', preview],
] as const)('%s stage', (_, s) => {
  it('has one arm64 Node.js 24 function per operation', () => {
    s.template.resourceCountIs('AWS::Lambda::Function', operations.length);
    expect(operations).toHaveLength(4);
    s.template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      MemorySize: 512,
      Timeout: 10,
      Environment: {
        Variables: {
          TABLE_NAME: { Ref: logicalId(s, s.stack.table) },
          NODE_OPTIONS: '--enable-source-maps',
          // Declared empty (inert) so `sam local --env-vars` can point it at DynamoDB Local.
          AWS_ENDPOINT_URL_DYNAMODB: '',
        },
      },
    });
  });

  it('routes every path of every operation to its own function over payload format 2.0', () => {
    const routes = Object.values(resources(s, 'AWS::ApiGatewayV2::Route'));
    const integrations = resources(s, 'AWS::ApiGatewayV2::Integration');
    const routeKeyOf = (op: (typeof operations)[number]) =>
      // HTTP API cannot declare a trailing-slash route; it serves `/a/` from the `/a` route.
      new Set(op.paths.map((p) => `${op.method} ${p.replace(/(.)\/$/, '$1')}`));

    const expected = operations.flatMap((op) => [...routeKeyOf(op)]);
    expect(routes.map((route) => route.Properties.RouteKey).sort()).toEqual(expected.sort());

    for (const op of operations) {
      const fnId = logicalId(s, s.stack.functions[op.name].function);
      for (const routeKey of routeKeyOf(op)) {
        const route = routes.find((r) => r.Properties.RouteKey === routeKey);
        const integrationId = route?.Properties.Target['Fn::Join'][1][1].Ref as string;
        expect(integrations[integrationId]?.Properties).toMatchObject({
          IntegrationUri: { 'Fn::GetAtt': [fnId, 'Arn'] },
          PayloadFormatVersion: '2.0',
        });
      }
    }
  });

  it('throttles the default stage', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingBurstLimit: 200, ThrottlingRateLimit: 100 },
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
    expect(table?.Properties.LocalSecondaryIndexes).toEqual(indexesOfKind('local'));
  });

  it.each(operations.map((op) => [op.name, op] as const))(
    'grants %s exactly its table access',
    (name, op) => {
      const statements = statementsOf(s, name);
      expect(tableActionsOf(statements).sort()).toEqual([...op.access.actions].sort());

      const tableArn = s.stack.resolve(s.stack.table.tableArn);
      const indexArns = op.access.indexes.map((index) =>
        s.stack.resolve(`${s.stack.table.tableArn}/index/${index}`),
      );
      const tableStatements = statements.filter((st) =>
        asArray(st.Action).some((a) => a.startsWith('dynamodb:')),
      );
      for (const statement of tableStatements) {
        const granted = asArray(statement.Resource);
        expect(granted).toHaveLength(1 + indexArns.length);
        expect(granted).toEqual(expect.arrayContaining([tableArn, ...indexArns]));
        expect(statement.Condition).toEqual({
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...op.access.leadingKeys] },
        });
      }

      // Anything else is logging, and only into the function's own log group.
      const logGroupId = logicalId(s, s.stack.functions[name].logGroup);
      for (const statement of statements.filter((st) => !tableStatements.includes(st))) {
        expect(asArray(statement.Action).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
        expect(statement.Resource).toEqual({ 'Fn::GetAtt': [logGroupId, 'Arn'] });
      }
    },
  );

  it('gives list-wallets no write action', () => {
    const actions = actionsOf(statementsOf(s, 'list-wallets'));
    for (const write of ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']) {
      expect(actions).not.toContain(`dynamodb:${write}`);
    }
    expect(actions.some((action) => action === 'dynamodb:*')).toBe(false);
  });

  it('gives delete-webhook-endpoint no Query and no index', () => {
    const statements = statementsOf(s, 'delete-webhook-endpoint');
    expect(actionsOf(statements)).not.toContain('dynamodb:Query');
    expect(JSON.stringify(statements)).not.toContain('/index/');
  });

  it('uses no AWS managed policy', () => {
    for (const role of Object.values(resources(s, 'AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('writes one JSON access-log line per request, without any header, to its own log group', () => {
    const accessLogsId = logicalId(s, s.stack.accessLogs);
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
    s.template.hasOutput('ApiUrl', {
      Value: { 'Fn::Join': ['', Match.arrayWith([{ Ref: logicalId(s, s.stack.api) }])] },
    });
    s.template.hasOutput('TableName', { Value: { Ref: logicalId(s, s.stack.table) } });
    s.template.hasResourceProperties('AWS::DynamoDB::Table', {
      Tags: Match.arrayWith([
        { Key: 'branch', Value: 'feature/test' },
        { Key: 'stage', Value: s.stack.node.id.replace('CommerceApi-', '') },
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
    expect(logGroups).toHaveLength(operations.length + 1);
    for (const group of logGroups) {
      expect(group.Properties.RetentionInDays).toBe(30);
      expect(group.DeletionPolicy).toBe('Retain');
    }
  });

  it('alarms on API 5xx and on throttles of every function', () => {
    prod.template.resourceCountIs('AWS::CloudWatch::Alarm', 1 + operations.length);
    prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
    });
    for (const op of operations) {
      const fnId = logicalId(prod, prod.stack.functions[op.name].function);
      prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId } }],
      });
    }
  });

  it('bundles each handler locally as ESM and records asset metadata for SAM', () => {
    for (const fn of Object.values(resources(prod, 'AWS::Lambda::Function'))) {
      expect(fn.Metadata).toMatchObject({ 'aws:asset:property': 'Code', 'aws:asset:is-bundled': true });
      const assetPath = fn.Metadata['aws:asset:path'] as string;
      expect(existsSync(path.join(prod.app.outdir, assetPath, 'index.mjs'))).toBe(true);
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
    expect(logGroups).toHaveLength(operations.length + 1);
    for (const group of logGroups) {
      expect(group.Properties.RetentionInDays).toBe(7);
      expect(group.DeletionPolicy).toBe('Delete');
    }
  });

  it('has no alarms', () => {
    preview.template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
  });
});

describe('stage selection: cdk -c stage=<stage> -c branch=<branch>', () => {
  const fromContext = (context: Record<string, string>) => {
    const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context } });
    const stack = createStageStack(app);
    return { app, stack, template: Template.fromStack(stack) };
  };
  const tagsOf = (template: Template) =>
    (Object.values(template.findResources('AWS::DynamoDB::Table'))[0] as Resource).Properties.Tags as {
      Key: string;
      Value: string;
    }[];

  it('deploys CommerceApi-prod, the production stage, when no stage is given', () => {
    const { app, stack, template } = fromContext({});
    expect(app.node.children.filter((child) => child instanceof CommerceApiStack)).toEqual([stack]);
    expect(stack.stackName).toBe('CommerceApi-prod');
    expect(tagsOf(template)).toEqual([{ Key: 'stage', Value: 'prod' }]);
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });

  it('deploys one stack per preview stage, tagged with its stage and branch', () => {
    const { stack, template } = fromContext({ stage: 'pr-123', branch: 'feature/sam-local' });
    expect(stack.stackName).toBe('CommerceApi-pr-123');
    expect(tagsOf(template)).toEqual(
      expect.arrayContaining([
        { Key: 'stage', Value: 'pr-123' },
        { Key: 'branch', Value: 'feature/sam-local' },
      ]),
    );
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { Name: 'commerce-api-pr-123' });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
  });

  it('tags every taggable resource, not only the table', () => {
    const { template } = fromContext({ stage: 'pr-123', branch: 'feature/sam-local' });
    const tagged = ['AWS::Lambda::Function', 'AWS::IAM::Role', 'AWS::Logs::LogGroup'];
    for (const type of tagged) {
      for (const resource of Object.values(template.findResources(type)) as Resource[]) {
        expect(resource.Properties.Tags, type).toEqual(
          expect.arrayContaining([{ Key: 'stage', Value: 'pr-123' }]),
        );
      }
    }
    const [api] = Object.values(template.findResources('AWS::ApiGatewayV2::Api')) as Resource[];
    expect(api?.Properties.Tags).toMatchObject({ stage: 'pr-123', branch: 'feature/sam-local' });
  });
});
