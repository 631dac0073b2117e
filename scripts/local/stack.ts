/**
 * The whole local stack as a function: DynamoDB Local, the table (from the
 * stack's definition), the demo data and the HTTP API over the real handlers.
 * `npm start` runs it; the end-to-end tests start it exactly the same way.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type AdminContext, createCustomerSession } from '#scripts/admin/commands.ts';
import { getCustomer } from '#shared/data/catalog.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { TABLE_NAME_ENV } from '#shared/operations.ts';
import { ensureTable } from './create-table.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import { type DemoData, seedDemo } from './seed.ts';
import { type LambdaHandler, startApiServer } from './server.ts';

export const LOCAL_TABLE_NAME = 'commerce-api-local';
export const LOCAL_REGION = 'us-east-1';

export interface LocalStackOptions {
  port: number;
  host?: string;
  /** Keep the database here across restarts; in memory when absent. */
  dataDir?: string;
  quiet?: boolean;
}

export interface LocalStack {
  demo: DemoData & { dynamodb_endpoint: string; table_name: string };
  reusedData: boolean;
  /** Base64 key sealing webhook secrets (the admin CLI needs it to create endpoints). */
  secretKey: string;
  stop(): Promise<void>;
}

/** Region and placeholder credentials: the SDK signs every request, DynamoDB Local ignores the signature. */
function localAwsEnvironment(endpoint: string): void {
  process.env.AWS_REGION = LOCAL_REGION;
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
  process.env[TABLE_NAME_ENV] = LOCAL_TABLE_NAME;
}

/** The key sealing webhook secrets: kept beside persistent data, else made per run. */
function secretKey(dataDir: string | undefined): Buffer {
  if (!dataDir) return randomBytes(32);
  const file = join(dataDir, 'webhook-secret.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600 });
  return Buffer.from(readFileSync(file, 'utf8'), 'base64');
}

/** On a restart over kept data, sessions (one hour) are renewed so the printed tokens work. */
async function renewSessions(ctx: AdminContext, demo: DemoData): Promise<DemoData> {
  const renew = async (customerId: string) => {
    const customer = await getCustomer(ctx.table, customerId);
    if (!customer) throw new Error(`demo customer ${customerId} is missing from the kept data`);
    return (await createCustomerSession(ctx, { customer })).token;
  };
  return {
    ...demo,
    customer_session_token: await renew(demo.customer_id),
    second_customer_session_token: await renew(demo.second_customer_id),
    large_customer_session_token: await renew(demo.large_customer_id),
  };
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const db = await startDynamoDbLocal(dataDir ? { dataDir } : {});
  try {
    localAwsEnvironment(db.endpoint);
    const admin = new DynamoDBClient({ region: LOCAL_REGION, endpoint: db.endpoint });
    const { created } = await ensureTable(admin, LOCAL_TABLE_NAME);
    admin.destroy();

    const host = options.host ?? '127.0.0.1';
    const baseUrl = `http://${host}:${options.port}`;
    const ctx: AdminContext = {
      table: { doc: createDocumentClient({ endpoint: db.endpoint }), name: LOCAL_TABLE_NAME },
      now: () => new Date(),
      secretKey: secretKey(dataDir),
    };
    const keptDemo = dataDir ? join(dataDir, 'demo.json') : undefined;
    const reusedData = !created && keptDemo !== undefined && existsSync(keptDemo);
    const demoData = reusedData
      ? await renewSessions(ctx, { ...JSON.parse(readFileSync(keptDemo, 'utf8')), base_url: baseUrl })
      : await seedDemo(ctx, baseUrl);
    if (keptDemo) writeFileSync(keptDemo, JSON.stringify(demoData, null, 2));
    ctx.table.doc.destroy();

    const server = await startApiServer({
      port: options.port,
      host,
      quiet: options.quiet ?? false,
      // Imported only now: each handler reads its environment when its module loads, as in Lambda.
      loadHandler: async (operation) =>
        ((await import(resolve(import.meta.dirname, '../..', operation.entry))) as { handler: LambdaHandler })
          .handler,
    });
    return {
      demo: {
        ...demoData,
        base_url: server.url,
        dynamodb_endpoint: db.endpoint,
        table_name: LOCAL_TABLE_NAME,
      },
      reusedData,
      secretKey: ctx.secretKey.toString('base64'),
      stop: async () => {
        await server.close();
        await db.stop();
      },
    };
  } catch (error) {
    await db.stop();
    throw error;
  }
}
