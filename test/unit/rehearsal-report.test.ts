import type { StackResourceSummary } from '@aws-sdk/client-cloudformation';
import type { TableDescription } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  formatTable,
  referencesOf,
  resourceReport,
  type Template,
  tableChecks,
  unsupportedTypes,
} from '#scripts/deploy/rehearsal-report.ts';

const summary = (id: string, type: string, status = 'CREATE_COMPLETE'): StackResourceSummary => ({
  LogicalResourceId: id,
  ResourceType: type,
  ResourceStatus: status as StackResourceSummary['ResourceStatus'],
  PhysicalResourceId: `phys-${id}`,
  LastUpdatedTimestamp: new Date(0),
});
/** What moto lists for a resource it skipped. */
const placeholder = { ResourceStatus: 'CREATE_COMPLETE' } as StackResourceSummary;

describe("moto's log", () => {
  it('names the resource types its CloudFormation skipped, once each', () => {
    const log = [
      'No Moto CloudFormation support for AWS::ApiGatewayV2::Api',
      '127.0.0.1 - - "POST / HTTP/1.1" 200 -',
      'No Moto CloudFormation support for AWS::ApiGatewayV2::Route',
      'No Moto CloudFormation support for AWS::ApiGatewayV2::Route',
    ].join('\n');
    expect([...unsupportedTypes(log)]).toEqual(['AWS::ApiGatewayV2::Api', 'AWS::ApiGatewayV2::Route']);
    expect(unsupportedTypes('').size).toBe(0);
  });
});

describe('referencesOf', () => {
  it('finds Ref, Fn::GetAtt and Fn::Sub targets, not pseudo parameters or Sub variables', () => {
    expect(
      [
        ...referencesOf({
          A: { Ref: 'Table' },
          B: { 'Fn::GetAtt': ['Role', 'Arn'] },
          C: { 'Fn::GetAtt': 'Fn.Arn' },
          D: [{ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, { Ref: 'HttpApi' }]] }],
          // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's Fn::Sub syntax, not JavaScript's.
          E: { 'Fn::Sub': 'x-${AWS::AccountId}-${Bucket}-${Queue.Arn}' },
          // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's Fn::Sub syntax, not JavaScript's.
          F: { 'Fn::Sub': ['${Name}-${Topic}', { Name: { Ref: 'Param' } }] },
        }),
      ].sort(),
    ).toEqual(['Bucket', 'Fn', 'HttpApi', 'Param', 'Queue', 'Role', 'Table', 'Topic']);
  });
});

describe('resourceReport', () => {
  const template: Template = {
    Resources: {
      Table: { Type: 'AWS::DynamoDB::Table' },
      Api: { Type: 'AWS::ApiGatewayV2::Api' },
      Permission: {
        Type: 'AWS::Lambda::Permission',
        Properties: { SourceArn: { 'Fn::Join': ['', ['arn:', { Ref: 'Api' }, '/*']] } },
      },
      Role: { Type: 'AWS::IAM::Role' },
    },
  };
  const unsupported = new Set(['AWS::ApiGatewayV2::Api']);

  it('counts created and not-modelled resources by type, and what refers to the skipped ones', () => {
    const report = resourceReport(
      template,
      [
        summary('Table', 'AWS::DynamoDB::Table'),
        summary('Permission', 'AWS::Lambda::Permission'),
        summary('Role', 'AWS::IAM::Role'),
        placeholder,
      ],
      unsupported,
    );
    expect(report.failures).toEqual([]);
    expect(report.notModelled).toEqual(['Api']);
    expect(report.anonymousEntries).toBe(1);
    expect(report.rows.map((row) => [row.type, row.declared, row.created, row.notModelled])).toEqual([
      ['AWS::ApiGatewayV2::Api', 1, 0, 1],
      ['AWS::DynamoDB::Table', 1, 1, 0],
      ['AWS::IAM::Role', 1, 1, 0],
      ['AWS::Lambda::Permission', 1, 1, 0],
    ]);
    expect(report.rows.find((row) => row.type === 'AWS::Lambda::Permission')).toMatchObject({
      referToSkipped: 1,
      skippedTargets: ['AWS::ApiGatewayV2::Api'],
    });
  });

  it('fails a resource missing without moto saying it cannot model it, and one not complete', () => {
    const report = resourceReport(
      template,
      [summary('Table', 'AWS::DynamoDB::Table'), summary('Role', 'AWS::IAM::Role', 'CREATE_FAILED')],
      unsupported,
    );
    expect(report.failures).toEqual([
      'Permission (AWS::Lambda::Permission) was not created, and moto did not say it cannot model it',
      'Role (AWS::IAM::Role) is CREATE_FAILED',
    ]);
    expect(report.rows.find((row) => row.type === 'AWS::Lambda::Permission')?.missing).toBe(1);
  });

  it('fails everything moto skipped when it never said why', () => {
    const report = resourceReport(template, [summary('Table', 'AWS::DynamoDB::Table')], new Set());
    expect(report.failures).toHaveLength(3);
  });
});

describe('tableChecks', () => {
  const key = (name: string, type: 'HASH' | 'RANGE') => ({ AttributeName: name, KeyType: type });
  const declared = {
    KeySchema: [key('PK', 'HASH'), key('SK', 'RANGE')],
    AttributeDefinitions: [
      { AttributeName: 'SK', AttributeType: 'S' },
      { AttributeName: 'PK', AttributeType: 'S' },
      { AttributeName: 'G', AttributeType: 'S' },
      { AttributeName: 'L', AttributeType: 'S' },
    ],
    BillingMode: 'PAY_PER_REQUEST',
    GlobalSecondaryIndexes: [
      {
        IndexName: 'GSI1',
        KeySchema: [key('G', 'HASH'), key('SK', 'RANGE')],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
    LocalSecondaryIndexes: [
      {
        IndexName: 'LSI1',
        KeySchema: [key('PK', 'HASH'), key('L', 'RANGE')],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
    TimeToLiveSpecification: { AttributeName: 'expires', Enabled: true },
    DeletionProtectionEnabled: true,
    PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
  };
  const table: TableDescription = {
    KeySchema: declared.KeySchema,
    AttributeDefinitions: [
      ...declared.AttributeDefinitions,
    ].reverse() as TableDescription['AttributeDefinitions'],
    BillingModeSummary: { BillingMode: 'PAY_PER_REQUEST' },
    GlobalSecondaryIndexes: declared.GlobalSecondaryIndexes as TableDescription['GlobalSecondaryIndexes'],
    LocalSecondaryIndexes: declared.LocalSecondaryIndexes as TableDescription['LocalSecondaryIndexes'],
    DeletionProtectionEnabled: true,
  };
  const enabled = {
    timeToLive: { TimeToLiveStatus: 'ENABLED', AttributeName: 'expires' },
    backups: {
      ContinuousBackupsStatus: 'ENABLED',
      PointInTimeRecoveryDescription: { PointInTimeRecoveryStatus: 'ENABLED' },
    },
  } as const;
  const modelled = { timeToLive: true, pointInTimeRecovery: true };
  const statuses = (checks: ReturnType<typeof tableChecks>) =>
    Object.fromEntries(checks.map((check) => [check.name.trim(), check.status]));

  it('passes a table deployed as declared, attribute order aside', () => {
    const checks = tableChecks(declared, { table, ...enabled }, modelled);
    expect(checks.filter((check) => check.status !== 'ok')).toEqual([]);
    expect(checks.map((check) => check.name.trim())).toEqual([
      'key schema',
      'attribute definitions',
      'billing mode',
      'global indexes',
      'GSI1',
      'local indexes',
      'LSI1',
      'time to live',
      'deletion protection',
      'point-in-time recovery',
    ]);
  });

  it('fails a missing index, another projection, other keys, TTL off and protection off', () => {
    const checks = tableChecks(
      declared,
      {
        table: {
          ...table,
          KeySchema: [key('PK', 'HASH')],
          GlobalSecondaryIndexes: [],
          LocalSecondaryIndexes: [
            { ...declared.LocalSecondaryIndexes[0], Projection: { ProjectionType: 'KEYS_ONLY' } },
          ],
          DeletionProtectionEnabled: false,
        } as TableDescription,
        timeToLive: { TimeToLiveStatus: 'DISABLED' },
        backups: enabled.backups,
      },
      modelled,
    );
    expect(statuses(checks)).toMatchObject({
      'key schema': 'mismatch',
      'global indexes': 'mismatch',
      GSI1: 'mismatch',
      LSI1: 'mismatch',
      'time to live': 'mismatch',
      'deletion protection': 'mismatch',
      'point-in-time recovery': 'ok',
    });
    expect(checks.find((check) => check.name.trim() === 'GSI1')?.actual).toBe('absent');
    expect(checks.find((check) => check.name.trim() === 'LSI1')?.actual).toBe(
      'PK HASH, L RANGE; projection KEYS_ONLY',
    );
  });

  it('reports what moto does not model as such, even when its answer happens to agree', () => {
    const checks = tableChecks(
      { ...declared, PointInTimeRecoverySpecification: undefined },
      {
        table,
        timeToLive: { TimeToLiveStatus: 'DISABLED' },
        backups: {
          ContinuousBackupsStatus: 'ENABLED',
          PointInTimeRecoveryDescription: { PointInTimeRecoveryStatus: 'DISABLED' },
        },
      },
      { timeToLive: false, pointInTimeRecovery: false },
    );
    expect(statuses(checks)).toMatchObject({
      'time to live': 'not modelled',
      'point-in-time recovery': 'not modelled',
    });
    expect(checks.filter((check) => check.status === 'mismatch')).toEqual([]);
  });
});

describe('formatTable', () => {
  it('aligns columns under a ruled header', () => {
    expect(formatTable(['a', 'long header'], [['wide cell', 'x']])).toEqual([
      'a          long header',
      '---------  -----------',
      'wide cell  x',
    ]);
  });
});
