/**
 * The migration off the retired local indexes (scripts/migrate/, docs/deploying.md), rehearsed on
 * DynamoDB Local: a table of the old shape filled by the services' writes (wallets with the five LSI
 * sort keys), copied (interrupted and resumed), written to meanwhile, caught up, and compared.
 */
import { CreateTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { createTableInput, deleteTable } from '#scripts/local/create-table.ts';
import { rehearseMigration } from '#scripts/migrate/rehearse.ts';
import { copyTable, itemHash, syncTable, verifyTables } from '#scripts/migrate/table-copy.ts';
import { dynamodbEndpoint, LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynamodb.ts';

const client = new DynamoDBClient({
  region: LOCAL_REGION,
  endpoint: dynamodbEndpoint(),
  credentials: LOCAL_CREDENTIALS,
});
afterAll(() => client.destroy());

describe('npm run migrate:table, rehearsed on DynamoDB Local', () => {
  it('moves every item of a table filled by the services to a table without local indexes: before and after equal', async () => {
    const lines: string[] = [];
    const result = await rehearseMigration(client, {
      customers: 8,
      walletsEach: 6,
      say: (line) => lines.push(line),
    });
    console.log(lines.join('\n'));
    expect(result.wallets).toBeGreaterThan(8 * 6);
    // The writes made after the copy are seen as a difference, and the catch-up removes it.
    expect(result.drifted.equal).toBe(false);
    expect(result.sync.put).toBeGreaterThanOrEqual(3); // customer, wallet, slot (+ the customer's count)
    expect(result.sync.deleted).toBe(1); // the session deleted on the old table
    expect(result.final.equal).toBe(true);
    expect(result.final.after.count).toBe(result.final.before.count);
    expect(result.final.before.count).toBeGreaterThan(result.filled);
    expect(result.sameOrders).toBe(5);
  });
});

describe('the comparison', () => {
  const key = { PK: { S: 'A' }, SK: { S: 'B' } };

  it("hashes an item whatever its attributes' and its sets' order, and tells any changed value apart", () => {
    const item = {
      ...key,
      tags: { SS: ['x', 'y'] },
      n: { N: '1' },
      m: { M: { a: { S: '1' }, b: { BOOL: true } } },
    };
    const reordered = {
      m: { M: { b: { BOOL: true }, a: { S: '1' } } },
      n: { N: '1' },
      tags: { SS: ['y', 'x'] },
      ...key,
    };
    expect(itemHash(reordered).equals(itemHash(item))).toBe(true);
    for (const changed of [
      { ...item, n: { N: '2' } },
      { ...item, n: { S: '1' } },
      { ...item, tags: { SS: ['x'] } },
      { ...item, m: { M: { a: { S: '1' }, b: { BOOL: false } } } },
      { ...item, extra: { NULL: true } },
    ]) {
      expect(itemHash(changed).equals(itemHash(item))).toBe(false);
    }
  });

  it('finds one changed attribute in one item of two tables, and the catch-up puts it right', async () => {
    const suffix = Date.now().toString(36);
    const [from, to] = [`cmp-old-${suffix}`, `cmp-new-${suffix}`];
    for (const name of [from, to])
      await client.send(new CreateTableCommand(createTableInput(name, { stream: false })));
    try {
      for (let i = 0; i < 60; i++) {
        await client.send(
          new PutItemCommand({
            TableName: from,
            Item: { PK: { S: `P${i % 7}` }, SK: { S: `S${i}` }, v: { N: String(i) } },
          }),
        );
      }
      await copyTable({ client, from, to, segments: 3 });
      expect((await verifyTables(client, from, to, 3)).equal).toBe(true);
      await client.send(
        new PutItemCommand({ TableName: to, Item: { PK: { S: 'P3' }, SK: { S: 'S10' }, v: { N: '11' } } }),
      );
      const drifted = await verifyTables(client, from, to, 3);
      expect(drifted.equal).toBe(false);
      expect(drifted.after.count).toBe(drifted.before.count);
      expect(await syncTable({ client, from, to, segments: 3, keyNames: ['PK', 'SK'] })).toEqual({
        put: 1,
        deleted: 0,
        unchanged: 59,
      });
      expect((await verifyTables(client, from, to, 3)).equal).toBe(true);
    } finally {
      for (const name of [from, to]) await deleteTable(client, name);
    }
  });
});
