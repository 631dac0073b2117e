/**
 * The functions' clients judged in process (scripts/local/iam/in-process.ts): the same judge as the
 * IAM proxy on the bytes the client would send, and the same refusal DynamoDB answers; an allowed
 * request goes on to the client's own request handler unchanged.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { judgeInProcess } from '#scripts/local/iam/in-process.ts';
import { createIamJudge } from '#scripts/local/iam/judge.ts';
import type { StackPolicies } from '#scripts/local/iam/policy.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';

const policies: StackPolicies = {
  tableLogicalId: 'Table',
  functions: {
    reader: {
      roleLogicalId: 'ReaderRole',
      statements: [
        { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: { 'Fn::GetAtt': ['Table', 'Arn'] } },
      ],
    },
  },
};

function client() {
  const doc = createDocumentClient({
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const sent: { target: string; body: string }[] = [];
  (doc.config as unknown as { requestHandler: unknown }).requestHandler = {
    handle: async (request: { headers: Record<string, string>; body: string }) => {
      sent.push({ target: request.headers['x-amz-target'] as string, body: request.body });
      return {
        response: {
          statusCode: 200,
          headers: { 'content-type': 'application/x-amz-json-1.0' },
          body: (await import('node:stream')).Readable.from([Buffer.from('{}')]),
        },
      };
    },
  };
  return { doc, sent };
}

describe('IAM judged in process', () => {
  it('refuses what the policy does not allow with the proxy judge’s own AccessDeniedException', async () => {
    const judge = createIamJudge({ tableName: 'commerce', policies, region: 'us-east-1' });
    const { doc, sent } = client();
    judgeInProcess(doc, judge, 'reader');
    const put = new PutCommand({ TableName: 'commerce', Item: { PK: 'CUSTOMER#1', SK: 'A' } });
    const error = await doc.send(put).then(
      () => undefined,
      (e: unknown) => e as Error & { $metadata: { httpStatusCode: number } },
    );
    expect(sent).toEqual([]);
    expect(error?.name).toBe('AccessDeniedException');
    expect(error?.$metadata.httpStatusCode).toBe(400);
    expect(error?.message).toBe(
      'User: arn:aws:sts::123456789012:assumed-role/ReaderRole/reader is not authorized to perform: ' +
        'dynamodb:PutItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/commerce because no ' +
        'identity-based policy allows the dynamodb:PutItem action',
    );
    // The proxy judges with the same function: the same words for the same bytes.
    const direct = createIamJudge({ tableName: 'commerce', policies, region: 'us-east-1' }).judge(
      'reader',
      'DynamoDB_20120810.PutItem',
      JSON.stringify({ TableName: 'commerce', Item: { PK: { S: 'CUSTOMER#1' }, SK: { S: 'A' } } }),
    );
    expect(JSON.parse(direct?.body ?? '{}').message).toBe(error?.message);
    expect(judge.denials.map((d) => [d.functionName, d.context.action])).toEqual([
      ['reader', 'dynamodb:PutItem'],
    ]);
  });

  it('sends an allowed request on, exactly as the client built it', async () => {
    const judge = createIamJudge({ tableName: 'commerce', policies, region: 'us-east-1' });
    const { doc, sent } = client();
    judgeInProcess(doc, judge, 'reader');
    await doc.send(new GetCommand({ TableName: 'commerce', Key: { PK: 'CUSTOMER#1', SK: 'A' } }));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.target).toBe('DynamoDB_20120810.GetItem');
    expect(JSON.parse(sent[0]?.body ?? '{}').Key).toEqual({ PK: { S: 'CUSTOMER#1' }, SK: { S: 'A' } });
    expect(judge.denials).toEqual([]);
  });

  it('refuses a function the stack does not have', () => {
    const judge = createIamJudge({ tableName: 'commerce', policies, region: 'us-east-1' });
    expect(() => judgeInProcess(client().doc, judge, 'nobody')).toThrow(/no function named nobody/);
  });
});
