/**
 * Records every DynamoDB call a document client sends, item by item, and prices it by DynamoDB's
 * rules (`capacity.ts`), beside the ConsumedCapacity DynamoDB Local answers.
 *
 * A middleware on the document client's stack (the step where the commands still carry plain
 * values, as the services built them): for a write it reads each addressed item before and after
 * the call through a separate client (strongly consistent GetItem, not recorded), so that puts,
 * updates and deletes are priced on the larger of both images and the index writes follow from the
 * change; reads are priced on the items they returned. It measures: it sends no request of its own
 * while a call is in flight that the handler could see, and it changes nothing in the call.
 * Sequential requests only: a concurrent writer between the before- and after-read would be counted
 * as this call's change.
 */
import { type AttributeValue, BatchGetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { tableDefinition } from '#shared/data/table.ts';
import {
  type IndexWrite,
  type Item,
  indexes,
  indexWrites,
  itemReadUnits,
  itemSize,
  queryReadUnits,
  writeUnits,
} from './capacity.ts';

export type Action = 'get' | 'query' | 'scan' | 'put' | 'update' | 'delete' | 'check';

/** One item a call read, wrote or checked, priced. */
export interface ItemAccess {
  action: Action;
  /** The partition it lands on: the table's partition key value, or `<index>:<value>` for a global index. */
  partition: string;
  sortKey?: string;
  bytes: number;
  units: number;
  transactional: boolean;
}

export interface RecordedCall {
  command: string;
  kind: 'read' | 'write';
  failed: boolean;
  error?: string;
  accesses: ItemAccess[];
  indexWrites: IndexWrite[];
  /** What DynamoDB Local reported (ConsumedCapacity, summed). */
  localUnits: number;
  /** The Query's page: items it returned. */
  returned?: number;
}

const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;
const PK = tableDefinition.partitionKey.name;
const SK = tableDefinition.sortKey.name;

type NativeKey = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: the SDK's command inputs and outputs, read by their documented shapes
type Loose = any;
interface WriteTarget {
  action: 'put' | 'update' | 'delete' | 'check';
  table: string;
  key: NativeKey;
  transactional: boolean;
}

const keyOf = (item: NativeKey): NativeKey => ({ [PK]: item[PK], [SK]: item[SK] });
const keyText = (key: NativeKey) => `${String(key[PK])}\u0000${String(key[SK])}`;

/** The items a write command addresses. */
function writeTargets(command: string, input: Record<string, Loose>): WriteTarget[] | undefined {
  switch (command) {
    case 'PutItemCommand':
      return [{ action: 'put', table: input.TableName, key: keyOf(input.Item), transactional: false }];
    case 'UpdateItemCommand':
      return [{ action: 'update', table: input.TableName, key: input.Key, transactional: false }];
    case 'DeleteItemCommand':
      return [{ action: 'delete', table: input.TableName, key: input.Key, transactional: false }];
    case 'TransactWriteItemsCommand':
      return (input.TransactItems as Record<string, Loose>[]).map((entry) => {
        if (entry.Put)
          return {
            action: 'put',
            table: entry.Put.TableName,
            key: keyOf(entry.Put.Item),
            transactional: true,
          };
        if (entry.Update)
          return {
            action: 'update',
            table: entry.Update.TableName,
            key: entry.Update.Key,
            transactional: true,
          };
        if (entry.Delete)
          return {
            action: 'delete',
            table: entry.Delete.TableName,
            key: entry.Delete.Key,
            transactional: true,
          };
        return {
          action: 'check',
          table: entry.ConditionCheck.TableName,
          key: entry.ConditionCheck.Key,
          transactional: true,
        };
      });
    case 'BatchWriteItemCommand':
      return Object.entries(input.RequestItems as Record<string, Record<string, Loose>[]>).flatMap(
        ([table, requests]) =>
          requests.map((r) =>
            r.PutRequest
              ? { action: 'put' as const, table, key: keyOf(r.PutRequest.Item), transactional: false }
              : { action: 'delete' as const, table, key: r.DeleteRequest.Key, transactional: false },
          ),
      );
    default:
      return undefined;
  }
}

const unitsOf = (consumed: unknown): number =>
  (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce(
    (sum: number, entry: { CapacityUnits?: number }) => sum + (entry.CapacityUnits ?? 0),
    0,
  );

/** The partition-key value a Query names, from its key condition. */
function queryPartition(input: Record<string, Loose>): string {
  const index = indexes.find((i) => i.name === input.IndexName);
  const keyName = index ? index.partitionKey.name : PK;
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  for (const [, name, placeholder] of String(input.KeyConditionExpression).matchAll(
    /([#\w]+)\s*=\s*(:\w+)/g,
  )) {
    if ((names[name as string] ?? name) === keyName) {
      const value = String(input.ExpressionAttributeValues?.[placeholder as string]);
      return index?.kind === 'global' ? `${index.name}:${value}` : value;
    }
  }
  return '?';
}

const sizeOfNative = (item: NativeKey) => itemSize(marshall(item, MARSHALL) as Item);

export class DynamoRecorder {
  calls: RecordedCall[] = [];
  /** Off: calls pass unrecorded (bulk filling, concurrent work). */
  enabled = true;

  constructor(private readonly raw: DynamoDBClient) {}

  install(doc: DynamoDBDocumentClient): void {
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.enabled) return next(args);
        const command = String((context as { commandName?: string }).commandName ?? 'unknown');
        const input = args.input as Record<string, Loose>;
        input.ReturnConsumedCapacity = 'TOTAL';
        const targets = writeTargets(command, input);
        const before = targets ? await this.read(targets) : undefined;
        let output: Record<string, Loose> | undefined;
        let error: unknown;
        try {
          const result = await next(args);
          output = result.output as Record<string, Loose>;
          return result;
        } catch (e) {
          error = e;
          throw e;
        } finally {
          const failed = error !== undefined;
          const call: RecordedCall = {
            command: command.replace(/Command$/, ''),
            kind: targets ? 'write' : 'read',
            failed,
            ...(failed ? { error: String((error as Error).name ?? error) } : {}),
            accesses: [],
            indexWrites: [],
            localUnits: unitsOf(output?.ConsumedCapacity),
          };
          if (targets && before) {
            const after = failed ? before : await this.read(targets);
            for (const target of targets) {
              const old = before.get(keyText(target.key));
              const now = after.get(keyText(target.key));
              const bytes =
                target.action === 'delete' || target.action === 'check' || failed
                  ? itemSize(old)
                  : Math.max(itemSize(old), itemSize(now));
              call.accesses.push({
                action: target.action,
                partition: String(target.key[PK]),
                sortKey: String(target.key[SK]),
                bytes,
                units: writeUnits(bytes, target.transactional),
                transactional: target.transactional,
              });
              if (!failed) call.indexWrites.push(...indexWrites(old, now));
            }
          } else if (output) {
            call.accesses = this.reads(command, input, output);
            if (command === 'QueryCommand') call.returned = (output.Items ?? []).length;
          }
          this.calls.push(call);
        }
      },
      { step: 'initialize', name: 'scaleRecorder', priority: 'high' },
    );
  }

  reset(): void {
    this.calls = [];
  }

  /** The addressed items as they stand (strongly consistent), by key. */
  private async read(targets: WriteTarget[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    const byTable = new Map<string, NativeKey[]>();
    for (const t of targets) byTable.set(t.table, [...(byTable.get(t.table) ?? []), t.key]);
    for (const [table, keys] of byTable) {
      for (let i = 0; i < keys.length; i += 100) {
        let request:
          | Record<string, { Keys: Record<string, AttributeValue>[]; ConsistentRead: boolean }>
          | undefined = {
          [table]: { Keys: keys.slice(i, i + 100).map((k) => marshall(k, MARSHALL)), ConsistentRead: true },
        };
        while (request && Object.keys(request).length > 0) {
          const answer = await this.raw.send(new BatchGetItemCommand({ RequestItems: request }));
          for (const item of answer.Responses?.[table] ?? []) {
            found.set(`${item[PK]?.S}\u0000${item[SK]?.S}`, item);
          }
          request = answer.UnprocessedKeys as typeof request;
        }
      }
    }
    return found;
  }

  private reads(command: string, input: Record<string, Loose>, output: Record<string, Loose>): ItemAccess[] {
    const access = (
      action: Action,
      partition: string,
      bytes: number,
      units: number,
      sortKey?: string,
    ): ItemAccess => ({
      action,
      partition,
      bytes,
      units,
      transactional: false,
      ...(sortKey !== undefined ? { sortKey } : {}),
    });
    switch (command) {
      case 'GetItemCommand': {
        const bytes = output.Item ? sizeOfNative(output.Item) : 0;
        return [
          access(
            'get',
            String(input.Key[PK]),
            bytes,
            itemReadUnits(bytes, input.ConsistentRead === true),
            String(input.Key[SK]),
          ),
        ];
      }
      case 'BatchGetItemCommand': {
        const accesses: ItemAccess[] = [];
        for (const [table, request] of Object.entries(input.RequestItems as Record<string, Loose>)) {
          const unprocessed = new Set(
            ((output.UnprocessedKeys?.[table]?.Keys ?? []) as NativeKey[]).map(keyText),
          );
          const items = new Map(
            ((output.Responses?.[table] ?? []) as NativeKey[]).map((item) => [keyText(item), item]),
          );
          for (const key of request.Keys as NativeKey[]) {
            if (unprocessed.has(keyText(key))) continue;
            const item = items.get(keyText(key));
            const bytes = item ? sizeOfNative(item) : 0;
            accesses.push(
              access(
                'get',
                String(key[PK]),
                bytes,
                itemReadUnits(bytes, request.ConsistentRead === true),
                String(key[SK]),
              ),
            );
          }
        }
        return accesses;
      }
      case 'QueryCommand':
      case 'ScanCommand': {
        const sizes = ((output.Items ?? []) as NativeKey[]).map(sizeOfNative);
        const partition = command === 'QueryCommand' ? queryPartition(input) : '*scan*';
        // One access for the page: a Query is priced on the sum of what it read.
        return [
          access(
            command === 'QueryCommand' ? 'query' : 'scan',
            partition,
            sizes.reduce((a, b) => a + b, 0),
            queryReadUnits(sizes, input.ConsistentRead === true),
          ),
        ];
      }
      default:
        return [];
    }
  }
}
