/**
 * The per-partition throughput emulator (test/scale/throughput.ts): 1,000 WCU per partition key in
 * any second, on an injected clock, over a document client whose requests never leave the process.
 */
import { Readable } from 'node:stream';
import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { transact } from '#shared/data/dynamo.ts';
import { attr } from '#shared/data/table.ts';
import { ServiceUnavailable } from '#shared/domain/errors.ts';
import { PartitionThroughput, partitionUnits, ThroughputEmulator } from '#test/scale/throughput.ts';

/** A client answering every request at once with 200 `{}`, counting them. */
function answeringClient() {
  let sent = 0;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: {
      handle: async () => {
        sent++;
        return {
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Readable.from([Buffer.from('{}')]),
          },
        };
      },
    } as never,
  });
  return { doc: DynamoDBDocumentClient.from(client), sent: () => sent };
}

describe('per-partition throughput', () => {
  it('admits 1,000 units per partition in a sliding second, whole requests only', () => {
    let now = 10_000;
    const partitions = new PartitionThroughput(() => now);
    for (let i = 0; i < 100; i++) expect(partitions.admit(new Map([['LIST#org', 10]]))).toEqual([]);
    expect(partitions.admit(new Map([['LIST#org', 1]]))).toEqual(['LIST#org']);
    // Another partition is not affected; a request touching both is refused whole.
    expect(partitions.admit(new Map([['PRODUCT#1', 5]]))).toEqual([]);
    expect(
      partitions.admit(
        new Map([
          ['PRODUCT#1', 5],
          ['LIST#org', 1],
        ]),
      ),
    ).toEqual(['LIST#org']);
    expect(partitions.used('PRODUCT#1')).toBe(5);
    now += 999;
    expect(partitions.admit(new Map([['LIST#org', 1]]))).toEqual(['LIST#org']);
    now += 2;
    expect(partitions.admit(new Map([['LIST#org', 1000]]))).toEqual([]);
  });

  it('prices a write from the request: the item put, 2× in a transaction, global-index entries on their own partition', () => {
    const entry = { PK: 'LIST#CUSTOMER#org', SK: 'name#ada#1', body: 'x'.repeat(1500) };
    const customer = {
      PK: 'CUSTOMER#1',
      SK: 'CUSTOMER#1',
      [attr.gsi1pk]: 'ORG#org',
      [attr.gsi1sk]: 'CUSTOMER#1',
    };
    const units = partitionUnits('TransactWriteItemsCommand', {
      TransactItems: [
        { Put: { TableName: 't', Item: entry } },
        { Put: { TableName: 't', Item: customer } },
        { Update: { TableName: 't', Key: { PK: 'LIST#CUSTOMER#org', SK: '#COUNT#3' } } },
      ],
    });
    expect(Object.fromEntries(units)).toEqual({
      'LIST#CUSTOMER#org': 2 * 2 + 2 * 1,
      'CUSTOMER#1': 2,
      'GSI1:ORG#org': 1,
    });
    expect(
      Object.fromEntries(
        partitionUnits('UpdateItemCommand', { Key: { PK: 'P', SK: 'S' } }, { sizeOf: () => 3000 }),
      ),
    ).toEqual({ P: 3 });
  });

  it('throttles writes past the limit as DynamoDB answers them, and run() turns a throttled transaction into a 503', async () => {
    const { doc, sent } = answeringClient();
    // A limit of 10 units: the same arithmetic as 1,000 in fewer requests.
    const emulator = new ThroughputEmulator(new PartitionThroughput(() => 0, 10));
    emulator.install(doc);
    const put = (pk: string) =>
      doc.send(
        new PutCommand({ TableName: 't', Item: { PK: pk, SK: `${Math.random()}`, body: 'x'.repeat(900) } }),
      );
    for (let i = 0; i < 10; i++) await put('HOT');
    await expect(put('HOT')).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    await put('COLD');
    expect(sent()).toBe(11);

    const tx = doc.send(
      new TransactWriteCommand({
        TransactItems: [{ Put: { TableName: 't', Item: { PK: 'HOT', SK: 'x' } } }],
      }),
    );
    const error = await tx.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransactionCanceledException);
    expect((error as TransactionCanceledException).CancellationReasons?.[0]?.Code).toBe('ThrottlingError');
    await expect(
      transact({ doc, name: 't' }, [{ Put: { TableName: 't', Item: { PK: 'HOT', SK: 'y' } } }]),
    ).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(emulator.throttled.map((t) => t.partitions)).toEqual([
      ['HOT'],
      ['HOT'],
      ['HOT'],
      ['HOT'],
      ['HOT'],
    ]);
  });
});
