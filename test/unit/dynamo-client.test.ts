/**
 * The production DynamoDB client does no work for logs nobody reads: the SDK's logger middleware
 * runs each call's input and output through the schema's sensitive-data filter before it asks the
 * (no-op) logger to log them, a walk over every attribute of every item read or written (4.6 % of
 * the fuzz smoke's CPU in one profile, the largest function of the SDK). Nothing of ours reads the
 * SDK's log: errors are logged by `run` and the telemetry middleware.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '#shared/data/dynamo.ts';

describe('createDocumentClient', () => {
  it('has no SDK logger middleware, and its calls still run through ours', async () => {
    const doc = createDocumentClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    expect(doc.middlewareStack.identify().join('\n')).not.toMatch(/loggerMiddleware/);
    expect(doc.middlewareStack.identify().join('\n')).toMatch(/commerceTelemetry/);
    // A filter that counts its calls, as the SDK would set it: never called.
    let filtered = 0;
    doc.middlewareStack.add(
      (next, context) => (args) => {
        const counted = context as {
          inputFilterSensitiveLog?: (x: unknown) => unknown;
          outputFilterSensitiveLog?: (x: unknown) => unknown;
        };
        counted.inputFilterSensitiveLog = counted.outputFilterSensitiveLog = (x) => {
          filtered++;
          return x;
        };
        return next(args);
      },
      { step: 'initialize', priority: 'high', name: 'countFilter' },
    );
    // Answered before it leaves the process.
    doc.middlewareStack.add(
      () => async () => ({
        output: { $metadata: {}, Items: [{ PK: { S: 'a' }, SK: { S: 'b' } }] },
        response: {},
      }),
      { step: 'finalizeRequest', priority: 'low', name: 'answer' },
    );
    const read = await doc.send(new ScanCommand({ TableName: 't' }));
    expect(read.Items).toHaveLength(1);
    await doc.send(new GetItemCommand({ TableName: 't', Key: { PK: { S: 'a' }, SK: { S: 'b' } } }));
    expect(filtered).toBe(0);
  });
});
