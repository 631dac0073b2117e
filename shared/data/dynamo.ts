/**
 * The document client and the one place where AWS SDK errors are translated.
 * Repositories call DynamoDB only through `run`, so services never see SDK
 * exception classes.
 */
import { type AttributeValue, DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ConditionFailed, ServiceUnavailable } from '../domain/errors.ts';

export interface Table {
  doc: DynamoDBDocumentClient;
  name: string;
}

export function createDocumentClient(config: DynamoDBClientConfig = {}): DynamoDBDocumentClient {
  // Standard retry mode with the SDK's exponential backoff; 3 attempts keeps a
  // throttled request inside API Gateway's 30 s limit with room to spare.
  const client = new DynamoDBClient({ maxAttempts: 3, ...config });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    unmarshallOptions: { wrapNumbers: false },
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

interface SdkError {
  name?: string;
  code?: string;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
  CancellationReasons?: { Code?: string }[];
  Item?: Record<string, AttributeValue>;
}

function isTransient(error: SdkError): boolean {
  if (error.name && TRANSIENT.has(error.name)) return true;
  if (error.code && TRANSIENT_CODES.has(error.code)) return true;
  if (error.$retryable) return true;
  const status = error.$metadata?.httpStatusCode;
  return status !== undefined && status >= 500;
}

/** Runs one DynamoDB call, turning SDK failures into domain errors. */
export async function run<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (raw) {
    const error = raw as SdkError;
    if (error.name === 'ConditionalCheckFailedException') {
      // lib-dynamodb does not unmarshall exceptions: the old item arrives as attribute values.
      throw new ConditionFailed([], error.Item ? unmarshall(error.Item) : undefined);
    }
    if (error.name === 'TransactionCanceledException') {
      const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code);
      if (codes.some((code) => code === 'TransactionConflict' || code === 'ThrottlingError')) {
        throw new ServiceUnavailable();
      }
      if (codes.includes('ConditionalCheckFailed')) throw new ConditionFailed(codes);
    }
    if (isTransient(error)) throw new ServiceUnavailable();
    throw raw;
  }
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A Put that only creates: it fails with ConditionFailed when the key is already taken. */
export function createOnly(table: Table, item: Record<string, unknown>) {
  return { TableName: table.name, Item: item, ConditionExpression: 'attribute_not_exists(PK)' };
}

export async function putNew(table: Table, item: Record<string, unknown>): Promise<void> {
  await run(() => table.doc.send(new PutCommand(createOnly(table, item))));
}

/** All writes or none. */
export async function transact(table: Table, items: TransactItem[]): Promise<void> {
  await run(() => table.doc.send(new TransactWriteCommand({ TransactItems: items })));
}
