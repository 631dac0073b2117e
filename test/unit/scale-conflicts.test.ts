/**
 * The transaction-conflict emulator (test/scale/conflicts.ts) on a document client whose requests
 * never leave the process: each request is answered when the test releases it, so "in flight" is
 * exactly what the test says, without a clock.
 */
import { Readable } from 'node:stream';
import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { transact } from '#shared/data/dynamo.ts';
import { ServiceUnavailable } from '#shared/domain/errors.ts';
import { ConflictEmulator } from '#test/scale/conflicts.ts';
import { waitFor } from '#test/support/wait.ts';

/** A client whose every request waits for `release()`, then answers 200 `{}`. */
function heldClient() {
  const waiting: (() => void)[] = [];
  let sent = 0;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: {
      handle: () => {
        sent++;
        return new Promise((resolve) =>
          waiting.push(() =>
            resolve({
              response: {
                statusCode: 200,
                headers: { 'content-type': 'application/x-amz-json-1.0' },
                body: Readable.from([Buffer.from('{}')]),
              },
            } as never),
          ),
        );
      },
    } as never,
  });
  const doc = DynamoDBDocumentClient.from(client);
  return {
    doc,
    sent: () => sent,
    /** Answers every request waiting so far. */
    release: () => {
      for (const answer of waiting.splice(0)) answer();
    },
  };
}

const TABLE = 't';
const put = (pk: string) => ({ Put: { TableName: TABLE, Item: { PK: pk, SK: pk, n: 1 } } });
const check = (pk: string) => ({
  ConditionCheck: { TableName: TABLE, Key: { PK: pk, SK: pk }, ConditionExpression: 'attribute_exists(PK)' },
});
/** A promise's outcome, readable while it is pending. */
const watch = <T>(promise: Promise<T>) => {
  const state: { done: boolean; error?: unknown } = { done: false };
  promise.then(
    () => {
      state.done = true;
    },
    (error: unknown) => {
      state.done = true;
      state.error = error;
    },
  );
  return state;
};

describe('transaction-conflict emulator', () => {
  it('cancels a transaction that overlaps one in flight on the same item, with DynamoDB’s reasons', async () => {
    const { doc, release, sent } = heldClient();
    const emulator = new ConflictEmulator();
    emulator.install(doc);
    const first = doc.send(new TransactWriteCommand({ TransactItems: [put('A'), check('PRODUCT#1')] }));
    await waitFor(() => sent() === 1);
    const second = watch(
      doc.send(new TransactWriteCommand({ TransactItems: [put('B'), check('PRODUCT#1')] })),
    );
    // Refused without reaching DynamoDB, or (the defect) sent on while the first is in flight.
    await waitFor(() => second.done || sent() === 2);
    release();
    await first;
    await waitFor(() => second.done);
    expect(sent()).toBe(1);
    const error = second.error;
    expect(error).toBeInstanceOf(TransactionCanceledException);
    expect((error as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual([
      'None',
      'TransactionConflict',
    ]);
    expect(emulator.conflicts).toEqual([
      { command: 'TransactWriteItemsCommand', items: [`${TABLE}\u0000PRODUCT#1\u0000PRODUCT#1`] },
    ]);
    // Once the first has answered, the item is free again.
    expect(emulator.heldItems()).toEqual([]);
    const third = doc.send(new TransactWriteCommand({ TransactItems: [put('C'), check('PRODUCT#1')] }));
    await waitFor(() => sent() === 2);
    release();
    await third;
    expect(emulator.committed).toBe(2);
  });

  it('lets transactions on disjoint items run at the same time', async () => {
    const { doc, release, sent } = heldClient();
    const emulator = new ConflictEmulator();
    emulator.install(doc);
    const first = doc.send(new TransactWriteCommand({ TransactItems: [put('A'), check('PRODUCT#1')] }));
    const second = doc.send(new TransactWriteCommand({ TransactItems: [put('B'), check('PRODUCT#2')] }));
    await waitFor(() => sent() === 2 || emulator.conflicts.length > 0);
    release();
    await Promise.all([first, second]);
    expect(emulator.conflicts).toEqual([]);
    expect(emulator.committed).toBe(2);
  });

  it('refuses a single write of an item a transaction holds, but not the other way round', async () => {
    const { doc, release, sent } = heldClient();
    const emulator = new ConflictEmulator();
    emulator.install(doc);
    const transaction = doc.send(new TransactWriteCommand({ TransactItems: [put('A')] }));
    await waitFor(() => sent() === 1);
    const single = watch(doc.send(new PutCommand({ TableName: TABLE, Item: { PK: 'A', SK: 'A' } })));
    await waitFor(() => single.done || sent() === 2);
    release();
    await transaction;
    await waitFor(() => single.done);
    expect(single.error).toMatchObject({ name: 'TransactionConflictException' });
    // A single write in flight does not hold its item against a transaction.
    const write = doc.send(new PutCommand({ TableName: TABLE, Item: { PK: 'B', SK: 'B' } }));
    await waitFor(() => sent() === 2);
    const after = doc.send(new TransactWriteCommand({ TransactItems: [put('B')] }));
    await waitFor(() => sent() === 3);
    release();
    await Promise.all([write, after]);
  });

  it('reaches the service code as DynamoDB’s conflict does: retried by run(), then 503 (ServiceUnavailable)', async () => {
    const { doc, release, sent } = heldClient();
    const emulator = new ConflictEmulator();
    emulator.install(doc);
    const table = { doc, name: TABLE };
    const holder = transact(table, [put('A'), check('PRODUCT#1')]);
    await waitFor(() => sent() === 1);
    const loser = watch(transact(table, [put('B'), check('PRODUCT#1')]));
    await waitFor(() => loser.done || sent() === 2);
    release();
    await holder;
    await waitFor(() => loser.done);
    expect(loser.error).toBeInstanceOf(ServiceUnavailable);
    // run() tried three times, each refused while the first was in flight.
    expect(emulator.conflicts).toHaveLength(3);
  });
});
