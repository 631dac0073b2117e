import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
} from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTableInput, ensureTable } from '../../scripts/local/create-table.ts';
import {
  type DynamoDbLocal,
  holdsListeningPort,
  JAVA_REQUIRED_MESSAGE,
  startDynamoDbLocal,
} from '../../scripts/local/dynamodb-local.ts';
import { type IndexDefinition, projectionTypeOf, tableDefinition } from '../../shared/data/table.ts';
import { freshTable } from '../support/dynamodb.ts';
import { waitFor } from '../support/wait.ts';

// Captured at import: handler modules read the endpoint at module scope, so the worker must inherit it.
const endpointAtImport = process.env.AWS_ENDPOINT_URL_DYNAMODB;

const moduleUrl = pathToFileURL(join(import.meta.dirname, '../../scripts/local/dynamodb-local.ts')).href;

/** Alive means present and not a zombie (a container's PID 1 may never reap). */
function processAlive(pid: number): boolean {
  try {
    const stat = execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    return stat !== '' && !stat.startsWith('Z');
  } catch {
    return false;
  }
}

function dynamoDbLocalJvms(port: number): string[] {
  const lines = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' }).split('\n');
  return lines.filter(
    (line) =>
      line.includes('DynamoDBLocal.jar') && line.includes(`-port ${port}`) && !/^\s*\d+\s+Z/.test(line),
  );
}

const clientFor = (endpoint: string) =>
  new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

describe('startDynamoDbLocal', () => {
  let db: DynamoDbLocal;
  let client: DynamoDBClient;

  beforeAll(async () => {
    db = await startDynamoDbLocal();
    client = clientFor(db.endpoint);
    console.info(`DynamoDB Local ready in ${db.readyInMs} ms on ${db.endpoint}`);
  });

  afterAll(async () => {
    client?.destroy();
    await db?.stop();
  });

  it('answers on a loopback endpoint', async () => {
    expect(db.endpoint).toBe(`http://127.0.0.1:${db.port}`);
    const tables = await client.send(new ListTablesCommand({}));
    expect(tables.TableNames).toEqual([]);
  });

  it('creates the table exactly as tableDefinition describes it, once', async () => {
    expect(await ensureTable(client, 'app')).toEqual({ created: true });
    expect(await ensureTable(client, 'app')).toEqual({ created: false });

    const table = (await client.send(new DescribeTableCommand({ TableName: 'app' }))).Table;
    expect(table?.TableStatus).toBe('ACTIVE');
    expect(table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table?.KeySchema).toEqual([
      { AttributeName: tableDefinition.partitionKey.name, KeyType: 'HASH' },
      { AttributeName: tableDefinition.sortKey.name, KeyType: 'RANGE' },
    ]);

    const keyNames = new Set(
      [
        tableDefinition.partitionKey,
        tableDefinition.sortKey,
        ...tableDefinition.indexes.flatMap((i) => [i.partitionKey, i.sortKey]),
      ].map((k) => k.name),
    );
    expect(table?.AttributeDefinitions?.map((a) => a.AttributeName).sort()).toEqual([...keyNames].sort());
    expect(table?.AttributeDefinitions?.every((a) => a.AttributeType === 'S')).toBe(true);

    const shape = (
      indexes: { IndexName?: string; KeySchema?: unknown; Projection?: { ProjectionType?: string } }[] = [],
    ) =>
      indexes
        .map((i) => ({ name: i.IndexName, keys: i.KeySchema, projection: i.Projection?.ProjectionType }))
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const expected = (kind: 'global' | 'local') =>
      (tableDefinition.indexes as readonly IndexDefinition[])
        .filter((i) => i.kind === kind)
        .map((i) => ({
          name: i.name,
          keys: [
            { AttributeName: i.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: i.sortKey.name, KeyType: 'RANGE' },
          ],
          projection: projectionTypeOf(i),
        }))
        .sort((a, b) => a.name.localeCompare(b.name));
    expect(shape(table?.GlobalSecondaryIndexes)).toEqual(expected('global'));
    expect(shape(table?.LocalSecondaryIndexes)).toEqual(expected('local'));
    expect(table?.GlobalSecondaryIndexes?.every((i) => i.IndexStatus === 'ACTIVE')).toBe(true);

    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: 'app' }));
    expect(ttl.TimeToLiveDescription).toEqual({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: tableDefinition.timeToLiveAttribute,
    });
  });

  it('builds CreateTable input with deduplicated attribute definitions', () => {
    const input = createTableInput('x');
    const names = input.AttributeDefinitions?.map((a) => a.AttributeName) ?? [];
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((n) => n === tableDefinition.partitionKey.name)).toHaveLength(1);
  });

  it('stop() ends the JVM and leaves no process behind', async () => {
    const other = await startDynamoDbLocal();
    expect(processAlive(other.pid)).toBe(true);
    expect(dynamoDbLocalJvms(other.port)).toHaveLength(1);
    await other.stop();
    expect(processAlive(other.pid)).toBe(false);
    expect(dynamoDbLocalJvms(other.port)).toEqual([]);
    await other.stop();
  });

  it('never probes a port another server took first: the JVM fails to bind it, and that server saw no request', async () => {
    // What a suite running beside saw: its IAM proxy took the port chosen free before the JVM bound
    // it, and recorded the ready probes as refused ListTables of one of its functions.
    const seen: string[] = [];
    const other = createServer((req, res) => {
      seen.push(String(req.headers['x-amz-target']));
      res.writeHead(403).end();
    });
    await new Promise<void>((done) => other.listen(0, '127.0.0.1', done));
    try {
      const { port } = other.address() as AddressInfo;
      expect(holdsListeningPort(process.pid, port)).toBe(true);
      await expect(startDynamoDbLocal({ port })).rejects.toThrow(/BindException|Address already in use/i);
      expect(seen).toEqual([]);
    } finally {
      await new Promise((done) => other.close(done));
    }
  });

  it('explains a missing java', async () => {
    await expect(startDynamoDbLocal({ javaPath: '/nonexistent/bin/java' })).rejects.toThrow(
      JAVA_REQUIRED_MESSAGE,
    );
  });
});

describe('no orphan JVM when the parent process ends', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'ddb-local-orphan-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  async function parentThat(ending: 'SIGINT' | 'SIGTERM' | 'exit') {
    const script = join(scratch, `parent-${ending}.mts`);
    writeFileSync(
      script,
      `import { startDynamoDbLocal } from ${JSON.stringify(moduleUrl)};
const db = await startDynamoDbLocal();
console.log(JSON.stringify({ pid: db.pid, port: db.port }));
${ending === 'exit' ? 'process.exit(0);' : 'setInterval(() => {}, 1000);'}
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: join(import.meta.dirname, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const jvm = await new Promise<{ pid: number; port: number }>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve(JSON.parse(line));
      });
      child.once('exit', () => reject(new Error(`parent exited early: ${out}`)));
    });
    return { child, exited, jvm };
  }

  it.each(['SIGINT', 'SIGTERM'] as const)('is killed when the parent gets %s', async (signal) => {
    const { child, exited, jvm } = await parentThat(signal);
    expect(processAlive(jvm.pid)).toBe(true);
    child.kill(signal);
    await exited;
    await waitFor(() => !processAlive(jvm.pid), 10_000, 'the JVM to exit');
    expect(dynamoDbLocalJvms(jvm.port)).toEqual([]);
  });

  it('is killed when the parent exits without stop()', async () => {
    const { exited, jvm } = await parentThat('exit');
    expect(await exited).toBe(0);
    await waitFor(() => !processAlive(jvm.pid), 10_000, 'the JVM to exit');
  });
});

describe('freshTable (shared engine from globalSetup)', () => {
  it('creates a uniquely named table and drops it', async () => {
    const a = await freshTable('fresh');
    const b = await freshTable('fresh');
    try {
      expect(a.tableName).not.toBe(b.tableName);
      expect(a.tableName).toMatch(/^fresh-/);
      await a.client.send(new PutCommand({ TableName: a.tableName, Item: { PK: 'X', SK: 'Y', n: 1 } }));
      const got = await a.client.send(new GetCommand({ TableName: a.tableName, Key: { PK: 'X', SK: 'Y' } }));
      expect(got.Item).toEqual({ PK: 'X', SK: 'Y', n: 1 });
      const other = await b.client.send(
        new GetCommand({ TableName: b.tableName, Key: { PK: 'X', SK: 'Y' } }),
      );
      expect(other.Item).toBeUndefined();
      expect(endpointAtImport).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(process.env.AWS_ENDPOINT_URL_DYNAMODB).toBe(endpointAtImport);
    } finally {
      await a.drop();
      await b.drop();
    }
  });
});
