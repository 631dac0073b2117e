/**
 * One DynamoDB Local per test run (vitest `globalSetup`), and `freshTable()`
 * so each test file gets its own table in it instead of its own engine.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import type { TestProject } from 'vitest/node';
import { deleteTable, ensureTable } from '../../scripts/local/create-table.ts';
import { startDynamoDbLocal } from '../../scripts/local/dynamodb-local.ts';
import type { StackPolicies } from '../../scripts/local/iam/policy.ts';
import { synthesizePolicies } from '../../scripts/local/iam/synth.ts';
import { newKeySetDocument, staticKeyring } from '../../shared/domain/keyring.ts';
import type { WebhookSettings } from '../../shared/runtime.ts';
import { type SeedSnapshot, takeSnapshot } from './snapshot.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    /** Every function's IAM policy, read from the synthesised template once per run. */
    stackPolicies: StackPolicies;
    /** The demo data set, seeded once per run (`test/support/snapshot.ts`). */
    seedSnapshot: SeedSnapshot;
    /** The in-process worlds' ID Token signing key, one per run (PKCS #8 PEM; test/support/world.ts). */
    worldIdTokenPrivateKey: string;
  }
}

export const LOCAL_REGION = 'us-east-1';
/** DynamoDB Local takes any access key of letters and digits, and checks no signature. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** Region and fake credentials: the SDK refuses to sign without them, DynamoDB Local ignores them. */
export function setLocalAwsEnv(endpoint?: string): void {
  process.env.AWS_REGION ??= LOCAL_REGION;
  process.env.AWS_DEFAULT_REGION ??= LOCAL_REGION;
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  if (endpoint) process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
}

interface Engine {
  endpoint: string;
  policies: StackPolicies;
  seed: SeedSnapshot;
  stop(): Promise<void>;
}

/**
 * What the projects of one run share in vitest's own process, whose global setups load this module
 * once per project: one policy synthesis and one demo seed (plain data: each file copies it into its
 * own table, on whichever engine).
 */
interface SharedRun {
  policies?: StackPolicies;
  seed?: Promise<SeedSnapshot>;
  idTokenKey?: string;
}
const runGlobals = globalThis as { __commerceTestRun?: SharedRun };
runGlobals.__commerceTestRun ??= {};
const shared: SharedRun = runGlobals.__commerceTestRun;

async function startEngine(): Promise<Engine> {
  // The JVM starts while CDK synthesises (synthesis blocks this thread, not the other process).
  // Both JIT tiers: the engine serves the project for minutes, past the point where C2's compiled code
  // costs less CPU per request than C1's (docs/performance.md); the per-file engines keep the fast start.
  const starting = startDynamoDbLocal({ jit: 'steady-state' });
  starting.catch(() => {});
  let policies: StackPolicies;
  try {
    shared.policies ??= synthesizePolicies();
    policies = shared.policies;
  } catch (error) {
    await (await starting).stop();
    throw error;
  }
  const db = await starting;
  setLocalAwsEnv(db.endpoint);
  try {
    shared.seed ??= seedOnce();
    return { endpoint: db.endpoint, policies, seed: await shared.seed, stop: () => db.stop() };
  } catch (error) {
    await db.stop();
    throw error;
  }
}

/**
 * One engine per project that needs DynamoDB (the policies and the seed are shared, above). A run
 * that shared one engine between the e2e stacks' streamed tables and the integration suites (on two
 * workers) had table-state.test.ts's stream reader read past the stream's oldest record
 * (TrimmedDataAccess) and the webhook suites' deliveries stop arriving; each project on its own
 * engine has been green.
 */
export default async function setup({ provide }: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  const started = Date.now();
  const ready = await startEngine();
  console.log(`DynamoDB Local ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  provide('dynamodbEndpoint', ready.endpoint);
  provide('stackPolicies', ready.policies);
  provide('seedSnapshot', ready.seed);
  shared.idTokenKey ??= generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  provide('worldIdTokenPrivateKey', shared.idTokenKey);
  return () => ready.stop();
}

async function seedOnce(): Promise<SeedSnapshot> {
  const fresh = await freshTable('seed-snapshot');
  try {
    const table = { doc: fresh.client, name: fresh.tableName };
    const keySet = newKeySetDocument();
    return await takeSnapshot(
      fresh.base,
      { table, now: () => new Date(), webhooks: testWebhooks(keySet) },
      keySet,
    );
  } finally {
    await fresh.drop();
  }
}

/**
 * Webhook settings over a key set held in memory; loopback refused unless asked for, as deployed
 * (`npm start` asks for it).
 */
export function testWebhooks(keySet: string, allowLoopback = false): WebhookSettings {
  return { keyring: staticKeyring(keySet), addresses: { allowLoopback } };
}

/** In vitest's own process, after a DynamoDB project's setup: the policies it synthesised. */
export function setupPolicies(): StackPolicies {
  if (!shared.policies) throw new Error('test/support/dynamodb.ts must come first in the globalSetup');
  return shared.policies;
}

/** The seed globalSetup took. */
export const seedSnapshot = (): SeedSnapshot => inject('seedSnapshot');

/** The policies globalSetup synthesised. */
export const stackPolicies = (): StackPolicies => inject('stackPolicies');

/** The endpoint inside a test worker: its project's engine, which test/support/dynamodb-env.ts put in the environment. */
export function dynamodbEndpoint(): string {
  const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? inject('dynamodbEndpoint');
  if (!endpoint)
    throw new Error('no DynamoDB endpoint: add test/support/dynamodb.ts to the vitest globalSetup');
  setLocalAwsEnv(endpoint);
  return endpoint;
}

export interface FreshTable {
  client: DynamoDBDocumentClient;
  /** The low-level client under `client` (raw attribute values). */
  base: DynamoDBClient;
  tableName: string;
  drop(): Promise<void>;
}

export async function freshTable(prefix = 'test'): Promise<FreshTable> {
  const endpoint = dynamodbEndpoint();
  const safePrefix = prefix.replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 200);
  const tableName = `${safePrefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const base = new DynamoDBClient({
    region: LOCAL_REGION,
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  // As the functions' clients (shared/data/dynamo.ts): no walk of every Scan through the SDK's log filter.
  base.middlewareStack.remove('loggerMiddleware');
  // No stream: DynamoDB Local would keep a stream record of every write of every suite, and a whole
  // run slowed to timeouts. A test pipeline turns on its table's stream (startLocalPipeline).
  await ensureTable(base, tableName, { stream: false });
  const client = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  return {
    client,
    base,
    tableName,
    drop: async () => {
      try {
        await deleteTable(base, tableName);
      } finally {
        base.destroy();
      }
    },
  };
}
