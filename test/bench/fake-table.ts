/**
 * A zero-latency, in-memory stand-in for the table, answering the commands our repositories send
 * (GetItem, BatchGetItem, Query on the wallet indexes, PutItem, UpdateItem, TransactWriteItems,
 * DeleteItem) from canned items. Writes succeed and are not kept, so every invocation sees the
 * same data and does the same work. Two faces:
 *   - `fakeDocumentClient()`: implements `send(command)` of the document client (warm overhead);
 *   - `startStubEndpoint()`: a loopback HTTP server speaking DynamoDB's JSON protocol (cold start:
 *     a fresh process pays the SDK's first-request work, signing and connection included).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { attr, type IndexDefinition, tableDefinition } from '#shared/data/table.ts';

type Item = Record<string, unknown>;
type Input = Record<string, unknown>;

const id = (pk: unknown, sk: unknown) => `${String(pk)}\u0000${String(sk)}`;

/** Sort-key attribute of every index, by name. */
const indexSortKey = new Map(
  (tableDefinition.indexes as readonly IndexDefinition[]).map((index) => [index.name, index.sortKey.name]),
);

export type OperationKind =
  | 'GetItem'
  | 'BatchGetItem'
  | 'Query'
  | 'PutItem'
  | 'UpdateItem'
  | 'TransactWriteItems'
  | 'DeleteItem';

export class FakeTable {
  private readonly items = new Map<string, Item>();
  private readonly sorted = new Map<string, Item[]>();
  readonly calls = new Map<OperationKind, number>();

  constructor(items: Item[]) {
    for (const stored of items) this.items.set(id(stored[attr.pk], stored[attr.sk]), stored);
  }

  /** Items of one partition in one index's order (cached: the data never changes). */
  private partition(pk: string, index: string | undefined): Item[] {
    const sortKey = index ? indexSortKey.get(index) : attr.sk;
    if (!sortKey) throw new Error(`fake table: unknown index ${index}`);
    const cacheKey = `${pk}\u0000${sortKey}`;
    let list = this.sorted.get(cacheKey);
    if (!list) {
      list = [...this.items.values()]
        .filter((stored) => stored[attr.pk] === pk && typeof stored[sortKey] === 'string')
        .sort((a, b) => ((a[sortKey] as string) < (b[sortKey] as string) ? -1 : 1));
      this.sorted.set(cacheKey, list);
    }
    return list;
  }

  handle(kind: OperationKind, input: Input): Input {
    this.calls.set(kind, (this.calls.get(kind) ?? 0) + 1);
    switch (kind) {
      case 'GetItem': {
        const key = input.Key as Item;
        const found = this.items.get(id(key[attr.pk], key[attr.sk]));
        return found ? { Item: found } : {};
      }
      case 'BatchGetItem': {
        const responses: Record<string, Item[]> = {};
        for (const [table, request] of Object.entries(
          input.RequestItems as Record<string, { Keys: Item[] }>,
        )) {
          responses[table] = request.Keys.map((key) => this.items.get(id(key[attr.pk], key[attr.sk]))).filter(
            (found): found is Item => found !== undefined,
          );
        }
        return { Responses: responses, UnprocessedKeys: {} };
      }
      case 'Query': {
        // `PK = :pk`, optionally `AND begins_with(SK, :prefix)` (the organization lists).
        const condition = /^PK = :pk(?: AND begins_with\(SK, (:\w+)\))?$/.exec(
          String(input.KeyConditionExpression),
        );
        if (!condition) {
          throw new Error(`fake table: unsupported query ${String(input.KeyConditionExpression)}`);
        }
        const values = input.ExpressionAttributeValues as Item;
        const pk = values[':pk'] as string;
        const prefix = condition[1] === undefined ? '' : String(values[condition[1]]);
        const index = input.IndexName as string | undefined;
        const sortKey = index ? (indexSortKey.get(index) as string) : attr.sk;
        let list = this.partition(pk, index);
        if (prefix) list = list.filter((stored) => String(stored[sortKey]).startsWith(prefix));
        if (input.ScanIndexForward === false) list = [...list].reverse();
        let start = 0;
        const after = input.ExclusiveStartKey as Item | undefined;
        if (after) start = list.findIndex((stored) => stored[sortKey] === after[sortKey]) + 1;
        const limit = (input.Limit as number | undefined) ?? list.length;
        const page = list.slice(start, start + limit);
        const last = page.at(-1);
        // Like DynamoDB: a query that stopped at its Limit returns where it stopped.
        const more = input.Limit !== undefined && page.length === limit;
        return {
          Items: page,
          Count: page.length,
          ...(more && last
            ? {
                LastEvaluatedKey: {
                  [attr.pk]: last[attr.pk],
                  [attr.sk]: last[attr.sk],
                  [sortKey]: last[sortKey],
                },
              }
            : {}),
        };
      }
      case 'PutItem':
      case 'UpdateItem':
      case 'TransactWriteItems':
      case 'DeleteItem':
        return {};
    }
  }
}

const COMMANDS: [abstract new (...args: never[]) => unknown, OperationKind][] = [
  [GetCommand, 'GetItem'],
  [BatchGetCommand, 'BatchGetItem'],
  [QueryCommand, 'Query'],
  [PutCommand, 'PutItem'],
  [UpdateCommand, 'UpdateItem'],
  [TransactWriteCommand, 'TransactWriteItems'],
  [DeleteCommand, 'DeleteItem'],
];

export interface RecordedCall {
  kind: OperationKind;
  /** The lib-dynamodb command class, e.g. `GetCommand`. */
  command: string;
  input: Input;
}

/** `send(command)` answered from the fake table: no SDK, no network, no marshalling. */
export function fakeDocumentClient(
  table: FakeTable,
  record?: (call: RecordedCall) => void,
): DynamoDBDocumentClient {
  return {
    send: async (command: { input: Input }) => {
      const kind = COMMANDS.find(([type]) => command instanceof type)?.[1];
      if (!kind) throw new Error(`fake table: unsupported command ${command.constructor.name}`);
      record?.({ kind, command: command.constructor.name, input: command.input });
      return table.handle(kind, command.input);
    },
  } as unknown as DynamoDBDocumentClient;
}

// ---------------------------------------------------------------------------
// The same table behind DynamoDB's wire protocol (JSON 1.0 over HTTP).
// ---------------------------------------------------------------------------

const unmarshallKeys = (keys: Record<string, unknown>[]) => keys.map((key) => unmarshall(key as never));

function toDocumentInput(kind: OperationKind, wire: Input): Input {
  const input: Input = { ...wire };
  if (wire.Key) input.Key = unmarshall(wire.Key as never);
  if (wire.ExclusiveStartKey) input.ExclusiveStartKey = unmarshall(wire.ExclusiveStartKey as never);
  if (wire.ExpressionAttributeValues) {
    input.ExpressionAttributeValues = unmarshall(wire.ExpressionAttributeValues as never);
  }
  if (kind === 'BatchGetItem') {
    input.RequestItems = Object.fromEntries(
      Object.entries(wire.RequestItems as Record<string, { Keys: Record<string, unknown>[] }>).map(
        ([table, request]) => [table, { Keys: unmarshallKeys(request.Keys) }],
      ),
    );
  }
  return input;
}

const marshallItem = (value: Item) => marshall(value, { removeUndefinedValues: true });

function toWireOutput(output: Input): Input {
  const wire: Input = { ...output };
  if (output.Item) wire.Item = marshallItem(output.Item as Item);
  if (output.Items) wire.Items = (output.Items as Item[]).map(marshallItem);
  if (output.LastEvaluatedKey) wire.LastEvaluatedKey = marshallItem(output.LastEvaluatedKey as Item);
  if (output.Responses) {
    wire.Responses = Object.fromEntries(
      Object.entries(output.Responses as Record<string, Item[]>).map(([table, items]) => [
        table,
        items.map(marshallItem),
      ]),
    );
  }
  return wire;
}

export interface StubEndpoint {
  url: string;
  requests: () => number;
  close(): Promise<void>;
}

/** Loopback HTTP server answering DynamoDB JSON-protocol requests from a fake table. */
export async function startStubEndpoint(table: FakeTable): Promise<StubEndpoint> {
  let count = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      count++;
      const target = String(req.headers['x-amz-target'] ?? '');
      const kind = target.split('.')[1] as OperationKind;
      let status = 200;
      let body: Input;
      try {
        const wire = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Input;
        body = toWireOutput(table.handle(kind, toDocumentInput(kind, wire)));
      } catch (error) {
        status = 400;
        body = { __type: 'com.amazon.coral.validate#ValidationException', message: String(error) };
      }
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        'content-length': Buffer.byteLength(text),
        'x-amzn-requestid': `stub-${count}`,
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
