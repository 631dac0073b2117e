/**
 * The fuzz suite's shortcut: a table's digest kept from its stream (followTable) must be the
 * digest a full Scan reads, for every kind of write, and `verify()` must catch a write the stream
 * did not record.
 */
// On a DynamoDB Local of its own: it reads its table's stream (test/support/private-engine.ts).

import { UpdateTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Table } from '#shared/data/dynamo.ts';
import { type FreshTable, freshTable } from '../support/dynamodb.ts';
import { usePrivateEngine } from '../support/private-engine.ts';
import { digestChanges, type FollowedTable, followTable, tableDigest } from '../support/table-state.ts';

usePrivateEngine();

let fresh: FreshTable;
let table: Table;
let followed: FollowedTable | undefined;

beforeEach(async () => {
  fresh = await freshTable('table-state');
  table = { doc: fresh.client, name: fresh.tableName };
});
afterEach(async () => {
  followed?.close();
  followed = undefined;
  await fresh.drop();
});

const put = (pk: string, sk: string, fields: Record<string, unknown> = {}) =>
  table.doc.send(new PutCommand({ TableName: table.name, Item: { PK: pk, SK: sk, ...fields } }));

describe('a digest kept from the stream', () => {
  it('is the full Scan digest after puts, updates, deletes and a transaction-free overwrite', async () => {
    await put('A', '1', { n: 1 });
    await put('A', '2', { tags: new Set(['x', 'y']) });
    followed = await followTable(table);
    const start = await followed.digest();
    expect(start.count).toBe(2);

    await put('B', '1', { nested: { b: 2, a: [1, 'two'] }, bytes: new Uint8Array([1, 2, 3]) });
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: { PK: 'A', SK: '1' },
        UpdateExpression: 'SET n = n + :one, note = :note',
        ExpressionAttributeValues: { ':one': 1, ':note': 'changed' },
      }),
    );
    await table.doc.send(new DeleteCommand({ TableName: table.name, Key: { PK: 'A', SK: '2' } }));
    await put('A', '2', { back: true });
    await table.doc.send(new DeleteCommand({ TableName: table.name, Key: { PK: 'C', SK: 'none' } }));

    const kept = await followed.digest();
    expect(kept).toEqual(await tableDigest(table));
    expect(digestChanges(start, kept).sort()).toEqual(['added B|1', 'changed A|1', 'changed A|2']);
    // A digest handed out earlier is a snapshot: later writes do not change it.
    expect(start.count).toBe(2);
    expect(start.items.has('B|1')).toBe(false);
    await followed.verify();
  });

  it('verify() fails when a write never reached the stream', async () => {
    await put('A', '1');
    followed = await followTable(table);
    await put('A', '2');
    await followed.verify();
    // With the stream off, a write leaves no record: only a full Scan sees it.
    await fresh.base.send(
      new UpdateTableCommand({ TableName: table.name, StreamSpecification: { StreamEnabled: false } }),
    );
    await put('A', '3');
    await expect(followed.verify()).rejects.toThrow(/differs from a full Scan: added A\|3/);
  });
});
