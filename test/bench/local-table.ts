/**
 * DynamoDB Local for sections 2 and 3: one engine per benchmark run, a fresh table created from
 * the stack's definition, the demo data set seeded with the operator commands (as `npm start`
 * does), and a document client — built by the production `createDocumentClient` — whose
 * middleware stack carries the capacity meter.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AdminContext } from '#scripts/admin/commands.ts';
import { deleteTable, ensureTable } from '#scripts/local/create-table.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '#scripts/local/dynamodb-local.ts';
import { type DemoData, seedDemo } from '#scripts/local/seed.ts';
import { createDocumentClient, type Table } from '#shared/data/dynamo.ts';
import { localIdTokenKeys } from '#shared/domain/id-token.ts';
import type { OperationName } from '#shared/operations.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { benchWebhooks, buildEvent } from './fixture.ts';
import { type Handler, handlerFactory, lambdaContext } from './handlers.ts';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** One DynamoDB request as the meter saw it. */
export interface MeteredCall {
  command: string;
  ms: number;
  /** Sum of `CapacityUnits` over the answer's ConsumedCapacity (an array for batches and transactions). */
  units: number;
  /** Read or write units, by the kind of command. */
  kind: 'read' | 'write';
  /** A conditional write that failed: DynamoDB reports no capacity but charges the write. */
  failed: boolean;
}

/** Commands as the underlying client names them (the document client's commands wrap these). */
const READS = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactGetItemsCommand',
]);

interface CapacityEntry {
  CapacityUnits?: number;
}

const unitsOf = (consumed: unknown): number =>
  (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce(
    (sum: number, entry: CapacityEntry) => sum + (entry.CapacityUnits ?? 0),
    0,
  );

/**
 * A client middleware: asks every command for `ReturnConsumedCapacity: 'TOTAL'` and records one
 * entry per round trip (the SDK's own retries, below this step, are not counted separately).
 */
export class CapacityMeter {
  calls: MeteredCall[] = [];

  install(doc: DynamoDBDocumentClient): void {
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
        const command = String(context.commandName ?? 'unknown');
        const kind = READS.has(command) ? 'read' : 'write';
        const started = performance.now();
        try {
          const result = await next(args);
          const output = result.output as { ConsumedCapacity?: unknown };
          this.calls.push({
            command,
            kind,
            ms: performance.now() - started,
            units: unitsOf(output.ConsumedCapacity),
            failed: false,
          });
          return result;
        } catch (error) {
          this.calls.push({ command, kind, ms: performance.now() - started, units: 0, failed: true });
          throw error;
        }
      },
      { step: 'initialize', name: 'benchCapacityMeter', priority: 'high' },
    );
  }

  reset(): void {
    this.calls = [];
  }
}

export interface LocalWorld {
  endpoint: string;
  table: Table;
  admin: AdminContext;
  demo: DemoData;
  meter: CapacityMeter;
  call(
    name: OperationName,
    method: string,
    url: string,
    options?: Parameters<typeof buildEvent>[2],
  ): Promise<{ status: number; body: string | undefined; headers: Record<string, unknown> }>;
  drop(): Promise<void>;
}

let engine: Promise<DynamoDbLocal> | undefined;

/** The run's DynamoDB Local (started on first use). */
export function dynamoDbLocal(): Promise<DynamoDbLocal> {
  engine ??= startDynamoDbLocal();
  return engine;
}

export async function stopDynamoDbLocal(): Promise<void> {
  if (engine) await (await engine).stop();
  engine = undefined;
}

export async function createLocalWorld(prefix: string): Promise<LocalWorld> {
  const db = await dynamoDbLocal();
  const tableName = `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const base = new DynamoDBClient({ region: REGION, endpoint: db.endpoint, credentials: CREDENTIALS });
  await ensureTable(base, tableName);
  const seeding = createDocumentClient({ region: REGION, endpoint: db.endpoint, credentials: CREDENTIALS });
  const admin: AdminContext = {
    table: { doc: seeding, name: tableName },
    now: () => new Date(),
    webhooks: benchWebhooks,
  };
  const demo = await seedDemo(admin, 'http://in-process');

  const doc = createDocumentClient({ region: REGION, endpoint: db.endpoint, credentials: CREDENTIALS });
  const meter = new CapacityMeter();
  meter.install(doc);
  const table: Table = { doc, name: tableName };
  // The OAuth handlers answer only with the stage's issuer, and the token endpoint with its signing keys.
  const deps: Dependencies = {
    table,
    now: () => new Date(),
    webhooks: benchWebhooks,
    issuer: 'https://api.bench.local',
    idTokenKeys: localIdTokenKeys(),
  };
  const handlers = new Map<OperationName, Handler>();
  return {
    endpoint: db.endpoint,
    table,
    admin,
    demo,
    meter,
    async call(name, method, url, options = {}) {
      let handler = handlers.get(name);
      if (!handler) {
        handler = (await handlerFactory(name))(deps);
        handlers.set(name, handler);
      }
      const result = await handler(buildEvent(method, url, options), lambdaContext());
      return { status: result.statusCode ?? 200, body: result.body, headers: result.headers ?? {} };
    },
    async drop() {
      doc.destroy();
      seeding.destroy();
      try {
        await deleteTable(base, tableName);
      } finally {
        base.destroy();
      }
    },
  };
}
