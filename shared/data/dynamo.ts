/**
 * The document client and the one place where AWS SDK errors are translated.
 * Repositories call DynamoDB only through `run`, so services never see SDK
 * exception classes.
 */
import { type AttributeValue, DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  type ScanCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { canonicalJson } from '../domain/canonical-json.ts';
import { ConditionFailed, ServiceUnavailable } from '../domain/errors.ts';
import { countDynamoCall, logError } from '../observability/telemetry.ts';
import { traceDynamoCall } from '../observability/xray.ts';
import { attr } from './table.ts';

export interface Table {
  doc: DynamoDBDocumentClient;
  name: string;
}

/**
 * Per attempt. Without these a DynamoDB that accepts the connection and never
 * answers holds the request for the SDK's 300 s socket default, far past the
 * function's 10 s: the caller got API Gateway's bare error instead of our 503.
 * A timed-out attempt is retried like any transient error; 3 attempts of 2 s
 * plus backoff stay inside the function timeout.
 */
const CONNECTION_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;

export function createDocumentClient(config: DynamoDBClientConfig = {}): DynamoDBDocumentClient {
  // Standard retry mode with the SDK's exponential backoff; 3 attempts keeps a
  // throttled request inside API Gateway's 30 s limit with room to spare.
  const client = new DynamoDBClient({
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      // Else the SDK only logs a warning when the request timeout passes.
      throwOnRequestTimeout: true,
    },
    ...config,
  });
  // The SDK's logger middleware runs each call's input and output through the schema's
  // sensitive-data filter (every attribute of every item) before it hands them to a logger that, by
  // default, drops them. We log DynamoDB calls ourselves (below, and `run`), never through the SDK.
  client.middlewareStack.remove('loggerMiddleware');
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    unmarshallOptions: { wrapNumbers: false },
  });
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const commandName = String((context as { commandName?: string }).commandName);
      // What each call consumed, for the request's log line and metrics; DynamoDB reports it for free.
      const input = args.input as { ReturnConsumedCapacity?: string; TableName?: string };
      input.ReturnConsumedCapacity ??= 'TOTAL';
      const startedAt = Date.now();
      const trace = (metadata: Metadata | undefined, error?: string) =>
        traceDynamoCall({
          operation: commandName.replace(/Command$/, ''),
          tableName: tableOf(input),
          region: process.env.AWS_REGION,
          startedAt,
          endedAt: Date.now(),
          requestId: metadata?.requestId,
          statusCode: metadata?.httpStatusCode,
          retries: Math.max(0, (metadata?.attempts ?? 1) - 1),
          ...(error ? { error } : {}),
        });
      try {
        const result = await next(args);
        countDynamoCall(commandName, result.output as Parameters<typeof countDynamoCall>[1]);
        trace((result.output as { $metadata?: Metadata }).$metadata);
        return result;
      } catch (error) {
        trace((error as SdkError).$metadata, (error as SdkError).name ?? 'Error');
        if ((error as SdkError).name === 'AccessDeniedException') {
          logAccessDenied(commandName, args.input);
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'commerceTelemetry' },
  );
  return doc;
}

/** The table a call names: directly, or in a batch's request map, or in a transaction's first item. */
function tableOf(input: unknown): string | undefined {
  const call = input as {
    TableName?: string;
    RequestItems?: Record<string, unknown>;
    TransactItems?: Record<string, { TableName?: string }>[];
  };
  if (call.TableName) return call.TableName;
  if (call.RequestItems) return Object.keys(call.RequestItems)[0];
  const first = call.TransactItems?.[0];
  return first ? Object.values(first)[0]?.TableName : undefined;
}

/**
 * A call the function's role does not allow is an operator's fault (the stack grants too little),
 * never the client's: it stays a bare 500, and this line tells the operator which grant is missing.
 * Only the action and the partition-key prefixes are logged, never a key or an item.
 */
function logAccessDenied(commandName: string, input: unknown): void {
  const prefixes = new Set<string>();
  const visit = (value: unknown, name?: string) => {
    if (typeof value === 'string') {
      if (name === attr.pk || name === attr.gsi1pk) prefixes.add(value.slice(0, value.indexOf('#') + 1));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) visit(child, key);
    }
  };
  visit(input);
  // A Query names its partition key only through a placeholder value.
  const query = input as {
    KeyConditionExpression?: string;
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  for (const placeholder of query.KeyConditionExpression?.match(/:\w+/g) ?? []) {
    const value = query.ExpressionAttributeValues?.[placeholder];
    if (typeof value === 'string' && value.includes('#'))
      prefixes.add(value.slice(0, value.indexOf('#') + 1));
  }
  logError('DynamoDB denied the call: the function role lacks a grant', {
    action: `dynamodb:${commandName.replace(/Command$/, '')}`,
    keyPrefixes: [...prefixes].sort(),
  });
}

const TRANSIENT = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionConflictException',
  'TransactionInProgressException',
  'LimitExceededException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'NetworkingError',
]);

const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

interface Metadata {
  httpStatusCode?: number;
  requestId?: string;
  attempts?: number;
}

interface SdkError {
  name?: string;
  code?: string;
  $retryable?: unknown;
  $metadata?: Metadata;
  CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[];
  Item?: Record<string, AttributeValue>;
}

function isTransient(error: SdkError): boolean {
  if (error.name && TRANSIENT.has(error.name)) return true;
  if (error.code && TRANSIENT_CODES.has(error.code)) return true;
  if (error.$retryable) return true;
  const status = error.$metadata?.httpStatusCode;
  return status !== undefined && status >= 500;
}

/**
 * A transaction cancelled by a conflicting one, or a single write refused because a
 * transaction holds its item, applied nothing, so sending it again is safe. The SDK
 * does not retry these (they are HTTP 400s); AWS advises retrying them with backoff.
 */
const CONFLICT_ATTEMPTS = 3;
const CONFLICT_BACKOFF_MS = 25;

function isConflict(error: SdkError): boolean {
  if (error.name === 'TransactionConflictException') return true;
  if (error.name !== 'TransactionCanceledException') return false;
  return (error.CancellationReasons ?? []).some(
    (reason) => reason.Code === 'TransactionConflict' || reason.Code === 'ThrottlingError',
  );
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every item a Query matches, page after page (`LastEvaluatedKey`), through `run`. */
export async function queryAll(
  table: Table,
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({ ...input, TableName: table.name, ...(start ? { ExclusiveStartKey: start } : {}) }),
      ),
    );
    items.push(...((result.Items ?? []) as Record<string, unknown>[]));
    start = result.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Every item a Scan returns, page after page (the operator's migrations: never a request's path). */
export async function scanAll(
  table: Table,
  input: Omit<ScanCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const result = await run(() =>
      table.doc.send(
        new ScanCommand({ ...input, TableName: table.name, ...(start ? { ExclusiveStartKey: start } : {}) }),
      ),
    );
    items.push(...((result.Items ?? []) as Record<string, unknown>[]));
    start = result.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Stream sequence numbers are decimal strings of up to 40 digits; padded, they compare as text. */
export const orderedSequence = (sequence: string): string => sequence.padStart(40, '0');

/** Runs one DynamoDB call, turning SDK failures into domain errors. */
export async function run<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (raw) {
      if (attempt >= CONFLICT_ATTEMPTS || !isConflict(raw as SdkError)) throw translate(raw);
      // Full jitter, so that the conflicting writers do not meet again.
      await pause(Math.random() * CONFLICT_BACKOFF_MS * 2 ** attempt);
    }
  }
}

/** A write refused because its partition key's item collection is full, alone or in a transaction. */
function isItemCollectionFull(error: SdkError): boolean {
  if (error.name === 'ItemCollectionSizeLimitExceededException') return true;
  return (
    error.name === 'TransactionCanceledException' &&
    (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ItemCollectionSizeLimitExceeded')
  );
}

/** The domain error for an SDK failure; anything unknown is returned as it is (a bare 500). */
function translate(raw: unknown): unknown {
  const error = raw as SdkError;
  if (error.name === 'ConditionalCheckFailedException') {
    // lib-dynamodb does not unmarshall exceptions: the old item arrives as attribute values.
    return new ConditionFailed([], error.Item ? unmarshall(error.Item) : undefined);
  }
  if (isItemCollectionFull(error)) {
    // A partition key's item collection reached the 10 GB that local secondary indexes allow: no
    // retry helps, and the caller is not at fault. The contract's 503, and a line for the operator.
    logError('DynamoDB item collection size limit reached (10 GB per partition key with local indexes)', {
      name: error.name,
    });
    return new ServiceUnavailable();
  }
  if (error.name === 'TransactionCanceledException') {
    const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code);
    if (codes.some((code) => code === 'TransactionConflict' || code === 'ThrottlingError')) {
      return new ServiceUnavailable();
    }
    if (codes.includes('ConditionalCheckFailed')) {
      // An item that asked for it (ReturnValuesOnConditionCheckFailure) comes back as it was.
      const items = (error.CancellationReasons ?? []).map((reason) =>
        reason.Item ? unmarshall(reason.Item) : undefined,
      );
      return new ConditionFailed(codes, items.find(Boolean), items);
    }
  }
  if (isTransient(error)) return new ServiceUnavailable();
  return raw;
}

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A Put that only creates: it fails with ConditionFailed when the key is already taken. */
export function createOnly(table: Table, item: Record<string, unknown>) {
  return { TableName: table.name, Item: item, ConditionExpression: 'attribute_not_exists(PK)' };
}

export async function putNew(table: Table, item: Record<string, unknown>): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new PutCommand({ ...createOnly(table, item), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      ),
    );
  } catch (error) {
    // The SDK retries a put whose answer was lost (a reset connection, a timeout) even when
    // the first attempt was applied; the retry then finds the very item it writes, which
    // is success, not a taken key (that was a 500). Items carry fresh random ids, so an
    // identical item is our own.
    if (error instanceof ConditionFailed && error.item && canonicalJson(error.item) === canonicalJson(item))
      return;
    throw error;
  }
}

/** All writes or none. */
export async function transact(table: Table, items: TransactItem[]): Promise<void> {
  await run(() => table.doc.send(new TransactWriteCommand({ TransactItems: items })));
}
