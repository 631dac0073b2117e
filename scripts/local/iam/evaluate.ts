/**
 * The authorisation DynamoDB asks IAM for, per request, and IAM's answer.
 *
 * A request becomes one or more request contexts (action, resource, `dynamodb:LeadingKeys`):
 * - single-item calls: the call's own action on the table, the item's partition key;
 * - Query: `dynamodb:Query` on the table or the index ARN, the partition-key value of the key
 *   condition (the index's partition key for an index);
 * - BatchGetItem / BatchWriteItem: one context per table, whose leading keys are all the partition
 *   keys the batch touches in it (a multi-valued key: `ForAllValues` needs every one to match a
 *   pattern of the same statement);
 * - TransactWriteItems / TransactGetItems: one context per item, under the item's own action
 *   (PutItem, UpdateItem, DeleteItem, ConditionCheckItem, GetItem), as DynamoDB documents;
 * - anything else: its action on the table, no leading keys (for which `ForAllValues` holds).
 *
 * Where AWS's documentation leaves a choice open (how a batch's keys meet a statement), the stricter
 * reading is taken, so a policy that passes here cannot be refused for it on AWS.
 *
 * Evaluation: an explicit Deny wins, else any Allow whose action, resource and every condition match,
 * else the implicit deny. Condition operators this project does not use are refused loudly rather
 * than guessed.
 */
import type { RawStatement } from './policy.ts';

// biome-ignore lint/suspicious/noExplicitAny: DynamoDB wire JSON (attribute values) is untyped here.
type Json = any;

export interface RequestContext {
  action: string;
  resource: string;
  /** Undefined when the request names no partition key (Scan, DescribeTable, ...). */
  leadingKeys?: string[];
}

export interface KeySchema {
  /** Partition-key attribute of the table. */
  partitionKey: string;
  /** Partition-key attribute of each index, by index name. */
  indexPartitionKeys: Record<string, string>;
}

export class UnsupportedRequest extends Error {}

const stringOf = (attribute: Json, what: string): string => {
  if (attribute && typeof attribute.S === 'string') return attribute.S;
  throw new UnsupportedRequest(`${what}: partition key is not a string attribute`);
};

function keyOf(item: Json, schema: KeySchema, what: string): string {
  return stringOf(item?.[schema.partitionKey], what);
}

/** The value the key condition requires of the partition key: `PK = :pk` (names and values resolved). */
function queryPartitionKey(body: Json, partitionKey: string): string {
  const expression: string = body.KeyConditionExpression ?? '';
  const names: Record<string, string> = body.ExpressionAttributeNames ?? {};
  for (const match of expression.matchAll(/([#\w.]+)\s*=\s*(:[\w]+)/g)) {
    const [, rawName, placeholder] = match as unknown as [string, string, string];
    const name = rawName.startsWith('#') ? names[rawName] : rawName;
    if (name === partitionKey) return stringOf(body.ExpressionAttributeValues?.[placeholder], 'Query');
  }
  throw new UnsupportedRequest(`Query: no equality on ${partitionKey} in "${expression}"`);
}

const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
  Get: 'dynamodb:GetItem',
};

/** `DynamoDB_20120810.GetItem` and its body → the request contexts IAM evaluates. */
export function requestContexts(
  target: string,
  body: Json,
  arnOf: (tableName: string) => string,
  schema: KeySchema,
): RequestContext[] {
  const operation = target.slice(target.indexOf('.') + 1);
  const action = `dynamodb:${operation}`;
  switch (operation) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      return [{ action, resource: arnOf(body.TableName), leadingKeys: [keyOf(body.Key, schema, operation)] }];
    case 'PutItem':
      return [
        { action, resource: arnOf(body.TableName), leadingKeys: [keyOf(body.Item, schema, operation)] },
      ];
    case 'Query': {
      const index: string | undefined = body.IndexName;
      const partitionKey = index === undefined ? schema.partitionKey : schema.indexPartitionKeys[index];
      if (partitionKey === undefined) throw new UnsupportedRequest(`Query: unknown index ${index}`);
      const table = arnOf(body.TableName);
      return [
        {
          action,
          resource: index === undefined ? table : `${table}/index/${index}`,
          leadingKeys: [queryPartitionKey(body, partitionKey)],
        },
      ];
    }
    case 'BatchGetItem':
      return Object.entries(body.RequestItems ?? {}).map(([table, request]) => ({
        action,
        resource: arnOf(table),
        leadingKeys: ((request as Json).Keys ?? []).map((key: Json) => keyOf(key, schema, operation)),
      }));
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems ?? {}).map(([table, requests]) => ({
        action,
        resource: arnOf(table),
        leadingKeys: (requests as Json[]).map((request) =>
          keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key, schema, operation),
        ),
      }));
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (body.TransactItems ?? []).map((entry: Json) => {
        const [kind, request] = Object.entries(entry)[0] as [string, Json];
        const itemAction = TRANSACT_ACTIONS[kind];
        if (!itemAction) throw new UnsupportedRequest(`${operation}: unknown item kind ${kind}`);
        return {
          action: itemAction,
          resource: arnOf(request.TableName),
          leadingKeys: [keyOf(request.Key ?? request.Item, schema, `${operation} ${kind}`)],
        };
      });
    default:
      return [{ action, resource: arnOf(body.TableName ?? '') }];
  }
}

/** Compiled patterns: a policy has a few dozen, and every request used to compile them again. */
const compiled = new Map<string, RegExp>();

/** IAM's `*` and `?` wildcards. */
function globMatches(pattern: string, value: string, ignoreCase = false): boolean {
  const key = `${ignoreCase ? 'i' : 's'}${pattern}`;
  let regex = compiled.get(key);
  if (!regex) {
    const source = pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.');
    regex = new RegExp(`^${source}$`, ignoreCase ? 'is' : 's');
    compiled.set(key, regex);
  }
  return regex.test(value);
}

const list = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

type ContextValues = string[] | undefined;

function contextValues(context: RequestContext, key: string): ContextValues {
  if (key.toLowerCase() === 'dynamodb:leadingkeys') return context.leadingKeys;
  throw new UnsupportedRequest(`condition key ${key} is not simulated`);
}

/** One operator on one key, with AWS's rules for missing keys and multi-valued sets. */
function conditionHolds(operator: string, key: string, expected: string[], context: RequestContext): boolean {
  const values = contextValues(context, key);
  const [set, base] = operator.includes(':')
    ? (operator.split(':') as [string, string])
    : [undefined, operator];
  const test = (value: string) => {
    switch (base) {
      case 'StringEquals':
        return expected.includes(value);
      case 'StringLike':
        return expected.some((pattern) => globMatches(pattern, value));
      default:
        throw new UnsupportedRequest(`condition operator ${operator} is not simulated`);
    }
  };
  if (base === 'Null') {
    const wantsNull = expected[0] === 'true';
    return wantsNull === (values === undefined || values.length === 0);
  }
  if (set === 'ForAllValues') return (values ?? []).every(test);
  if (set === 'ForAnyValue') return (values ?? []).some(test);
  if (set !== undefined) throw new UnsupportedRequest(`condition operator ${operator} is not simulated`);
  // A single-valued operator on a key absent from the request does not match.
  return values !== undefined && values.length === 1 && test(values[0] as string);
}

export interface ResolvedStatement extends RawStatement {
  Resource: string | string[];
}

function statementMatches(statement: ResolvedStatement, context: RequestContext): boolean {
  if (statement.NotAction !== undefined || statement.NotResource !== undefined) {
    throw new UnsupportedRequest('NotAction/NotResource are not simulated');
  }
  const actionMatches = list(statement.Action).some((pattern) => globMatches(pattern, context.action, true));
  if (!actionMatches) return false;
  if (!list(statement.Resource).some((pattern) => globMatches(pattern, context.resource))) return false;
  return Object.entries(statement.Condition ?? {}).every(([operator, keys]) =>
    Object.entries(keys).every(([key, expected]) => conditionHolds(operator, key, list(expected), context)),
  );
}

export type Decision = { allowed: true; statement: number } | { allowed: false; explicit: boolean };

export function decide(statements: readonly ResolvedStatement[], context: RequestContext): Decision {
  let allowedBy: number | undefined;
  for (const [index, statement] of statements.entries()) {
    if (!statementMatches(statement, context)) continue;
    if (statement.Effect === 'Deny') return { allowed: false, explicit: true };
    allowedBy ??= index;
  }
  return allowedBy === undefined
    ? { allowed: false, explicit: false }
    : { allowed: true, statement: allowedBy };
}
