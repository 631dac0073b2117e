/**
 * Creates the application table from `tableDefinition`, the same definition
 * the CDK stack reads, so local and deployed tables cannot drift.
 */
import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type KeySchemaElement,
  ResourceInUseException,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { TableShape } from '../../shared/data/legacy-table.ts';
import {
  type IndexDefinition,
  type KeyAttribute,
  projectionTypeOf,
  tableDefinition,
} from '../../shared/data/table.ts';

const keySchema = (partitionKey: KeyAttribute, sortKey: KeyAttribute): KeySchemaElement[] => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' },
  { AttributeName: sortKey.name, KeyType: 'RANGE' },
];

/**
 * `stream: false`: no stream (tests that run no pipeline: DynamoDB Local keeps stream records for every write).
 * `definition`: another shape than `tableDefinition`, only the retired one with local indexes
 * (`shared/data/legacy-table.ts`), which the migration rehearsals create and fill.
 */
export interface TableOptions {
  stream?: boolean;
  definition?: TableShape;
}

export function createTableInput(tableName: string, options: TableOptions = {}): CreateTableCommandInput {
  const indexes = (options.definition ?? tableDefinition).indexes as readonly IndexDefinition[];
  const attributes = new Map<string, AttributeDefinition>();
  for (const key of [
    tableDefinition.partitionKey,
    tableDefinition.sortKey,
    ...indexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ]) {
    const known = attributes.get(key.name);
    if (known && known.AttributeType !== key.type) {
      throw new Error(`attribute ${key.name} is declared both as ${known.AttributeType} and ${key.type}`);
    }
    attributes.set(key.name, { AttributeName: key.name, AttributeType: key.type });
  }
  const global = indexes.filter((index) => index.kind === 'global');
  const local = indexes.filter((index) => index.kind === 'local');
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    ...(options.stream !== false && {
      StreamSpecification: { StreamEnabled: true, StreamViewType: tableDefinition.streamViewType },
    }),
    AttributeDefinitions: [...attributes.values()],
    KeySchema: keySchema(tableDefinition.partitionKey, tableDefinition.sortKey),
    ...(global.length > 0 && {
      GlobalSecondaryIndexes: global.map((index) => ({
        IndexName: index.name,
        KeySchema: keySchema(index.partitionKey, index.sortKey),
        Projection: { ProjectionType: projectionTypeOf(index) },
      })),
    }),
    ...(local.length > 0 && {
      LocalSecondaryIndexes: local.map((index) => ({
        IndexName: index.name,
        KeySchema: keySchema(index.partitionKey, index.sortKey),
        Projection: { ProjectionType: projectionTypeOf(index) },
      })),
    }),
  };
}

const keyText = (schema: KeySchemaElement[] | undefined) =>
  (schema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');

/** Differences between an existing table and `tableDefinition` (empty when they agree). */
export function tableShapeDifferences(
  description: TableDescription,
  definition: TableShape = tableDefinition,
): string[] {
  const wanted = createTableInput(description.TableName ?? '', { definition });
  const problems: string[] = [];
  if (keyText(description.KeySchema) !== keyText(wanted.KeySchema)) {
    problems.push(`key schema ${keyText(description.KeySchema)} (expected ${keyText(wanted.KeySchema)})`);
  }
  const compare = (
    kind: string,
    actual: {
      IndexName?: string;
      KeySchema?: KeySchemaElement[];
      Projection?: { ProjectionType?: string };
    }[] = [],
    expected: {
      IndexName?: string;
      KeySchema?: KeySchemaElement[];
      Projection?: { ProjectionType?: string };
    }[] = [],
  ) => {
    const byName = new Map(actual.map((index) => [index.IndexName, index]));
    for (const index of expected) {
      const found = byName.get(index.IndexName);
      byName.delete(index.IndexName);
      if (!found) problems.push(`${kind} ${index.IndexName} missing`);
      else if (keyText(found.KeySchema) !== keyText(index.KeySchema)) {
        problems.push(
          `${kind} ${index.IndexName} keyed ${keyText(found.KeySchema)} (expected ${keyText(index.KeySchema)})`,
        );
      } else if (found.Projection?.ProjectionType !== index.Projection?.ProjectionType) {
        problems.push(`${kind} ${index.IndexName} projects ${found.Projection?.ProjectionType}`);
      }
    }
    for (const name of byName.keys()) problems.push(`unexpected ${kind} ${name}`);
  };
  const stream = description.StreamSpecification;
  if (stream?.StreamEnabled && stream.StreamViewType !== tableDefinition.streamViewType) {
    problems.push(`stream of ${stream.StreamViewType} (expected ${tableDefinition.streamViewType})`);
  }
  compare('GSI', description.GlobalSecondaryIndexes, wanted.GlobalSecondaryIndexes);
  compare('LSI', description.LocalSecondaryIndexes, wanted.LocalSecondaryIndexes);
  return problems;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function describe(client: DynamoDBClient, tableName: string): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

/** The SDK waiters poll every 20 s at best; a local engine is ready in milliseconds. */
async function waitUntilActive(
  client: DynamoDBClient,
  tableName: string,
  timeoutMs = 60_000,
): Promise<TableDescription> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const table = await describe(client, tableName);
    const ready =
      table?.TableStatus === 'ACTIVE' &&
      (table.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === 'ACTIVE');
    if (table && ready) return table;
    if (Date.now() > deadline) throw new Error(`table ${tableName} not ACTIVE after ${timeoutMs} ms`);
    await sleep(100);
  }
}

async function enableTimeToLive(client: DynamoDBClient, tableName: string): Promise<void> {
  const attribute = tableDefinition.timeToLiveAttribute;
  const current = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = current.TimeToLiveDescription?.TimeToLiveStatus;
  if (
    (status === 'ENABLED' || status === 'ENABLING') &&
    current.TimeToLiveDescription?.AttributeName === attribute
  ) {
    return;
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: attribute, Enabled: true },
    }),
  );
}

/**
 * Creates the table unless it exists, waits until it is ACTIVE and enables TTL.
 * An existing table of another shape (say, an old `--data-dir`) is an error:
 * the handlers would fail later in far more confusing ways.
 */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  options: TableOptions = {},
): Promise<{ created: boolean }> {
  let created = false;
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName, options)));
    created = true;
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const table = await waitUntilActive(client, tableName);
  const differences = tableShapeDifferences(table, options.definition);
  if (differences.length > 0) {
    const legacy = (table.LocalSecondaryIndexes ?? []).length > 0;
    throw new Error(
      `table ${tableName} exists with another shape than shared/data/table.ts (${differences.join('; ')}): ` +
        (legacy
          ? 'it has the retired local indexes: copy it to a new table (npm run migrate:table, docs/deploying.md) or delete it or its data directory'
          : 'delete it or its data directory'),
    );
  }
  // A table kept from before the webhook pipeline (`--data-dir`): its stream is all it lacks.
  if (options.stream !== false) await enableStream(client, table);
  await enableTimeToLive(client, tableName);
  return { created };
}

/** Turns on the table's stream (the outbox's way out) unless it is on; returns the stream's ARN. */
export async function enableStream(client: DynamoDBClient, table: TableDescription): Promise<string> {
  const tableName = table.TableName as string;
  if (table.StreamSpecification?.StreamEnabled && table.LatestStreamArn) return table.LatestStreamArn;
  await client.send(
    new UpdateTableCommand({
      TableName: tableName,
      StreamSpecification: { StreamEnabled: true, StreamViewType: tableDefinition.streamViewType },
    }),
  );
  const updated = await waitUntilActive(client, tableName);
  if (!updated.LatestStreamArn) throw new Error(`table ${tableName} has no stream after enabling it`);
  return updated.LatestStreamArn;
}

export async function deleteTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return;
    throw error;
  }
}
