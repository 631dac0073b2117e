/**
 * DynamoDB's transaction conflicts, emulated for tests (DynamoDB Local does not model them).
 *
 * DynamoDB (developer guide, "Transaction conflict handling") refuses:
 * - a TransactWriteItems one of whose items is part of another TransactWriteItems in flight: the
 *   whole transaction is cancelled, `TransactionCanceledException` with one cancellation reason per
 *   action, `TransactionConflict` where the item is held, `None` elsewhere;
 * - a PutItem, UpdateItem or DeleteItem of an item a TransactWriteItems in flight holds:
 *   `TransactionConflictException`;
 * - a TransactGetItems one of whose items a transaction or a single write has in flight.
 * A single write does not hold its item against a later transaction (DynamoDB orders those).
 *
 * `ConflictEmulator.install(doc)` puts a middleware on a document client's stack, above the SDK's
 * own retries (the service code sees what a conflict looks like; the SDK does not retry these, as
 * it does not on AWS): a transaction holds its items from the moment it is sent until its answer
 * arrives, and anything that overlaps it meanwhile fails as DynamoDB would fail it. `hold`, when
 * given, stretches each transaction's time in flight (DynamoDB Local answers in a millisecond or
 * two; the service takes longer, so fewer overlaps are seen locally than on AWS).
 */
import { TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tableDefinition } from '#shared/data/table.ts';

const PK = tableDefinition.partitionKey.name;
const SK = tableDefinition.sortKey.name;

// biome-ignore lint/suspicious/noExplicitAny: the SDK's command inputs, read by their documented shapes
type Input = Record<string, any>;

/** `<table>\0<PK>\0<SK>` of an item a command addresses. */
const itemKey = (table: string, key: Input) => `${table}\u0000${String(key[PK])}\u0000${String(key[SK])}`;

/** The items of a transaction, one per action, in order. */
export function transactionItems(input: Input): string[] {
  return (input.TransactItems as Input[]).map((entry) => {
    const action = entry.Put ?? entry.Update ?? entry.Delete ?? entry.ConditionCheck ?? entry.Get;
    return itemKey(action.TableName, entry.Put ? entry.Put.Item : action.Key);
  });
}

function singleWriteItem(command: string, input: Input): string | undefined {
  if (command === 'PutItemCommand') return itemKey(input.TableName, input.Item);
  if (command === 'UpdateItemCommand' || command === 'DeleteItemCommand')
    return itemKey(input.TableName, input.Key);
  return undefined;
}

export interface Conflict {
  command: string;
  /** The items that were held by another request. */
  items: string[];
}

const metadata = { httpStatusCode: 400, requestId: 'conflict-emulator', attempts: 1, totalRetryDelay: 0 };

export class ConflictEmulator {
  /** Items held by transactions in flight (count: several single writes may hold one for TransactGet). */
  private readonly held = new Map<string, number>();
  private readonly writing = new Map<string, number>();
  readonly conflicts: Conflict[] = [];
  /** Transactions that passed. */
  committed = 0;
  enabled = true;

  constructor(private readonly hold?: () => Promise<void>) {}

  install(doc: DynamoDBDocumentClient): void {
    doc.middlewareStack.add(
      (next, context) => async (args) =>
        this.guard(String((context as { commandName?: string }).commandName), args.input as Input, () =>
          next(args),
        ),
      { step: 'initialize', name: 'transactionConflictEmulator', priority: 'high' },
    );
  }

  /** Sends `send` unless DynamoDB would refuse the command for a conflict, holding its items meanwhile. */
  async guard<T>(command: string, input: Input, send: () => Promise<T>): Promise<T> {
    if (!this.enabled) return send();
    if (command === 'TransactWriteItemsCommand' || command === 'TransactGetItemsCommand') {
      const items = transactionItems(input);
      const against = command === 'TransactWriteItemsCommand' ? [this.held] : [this.held, this.writing];
      const clash = items.map((item) => against.some((map) => (map.get(item) ?? 0) > 0));
      if (clash.some(Boolean)) {
        this.conflicts.push({ command, items: items.filter((_, i) => clash[i]) });
        const codes = clash.map((c) => (c ? 'TransactionConflict' : 'None'));
        throw new TransactionCanceledException({
          message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}]`,
          CancellationReasons: codes.map((Code) =>
            Code === 'None' ? { Code } : { Code, Message: 'Transaction is ongoing for the item' },
          ),
          $metadata: metadata,
        });
      }
      if (command === 'TransactGetItemsCommand') return send();
      for (const item of items) this.held.set(item, (this.held.get(item) ?? 0) + 1);
      try {
        await this.hold?.();
        const result = await send();
        this.committed++;
        return result;
      } finally {
        for (const item of items) {
          const left = (this.held.get(item) ?? 1) - 1;
          if (left > 0) this.held.set(item, left);
          else this.held.delete(item);
        }
      }
    }
    const item = singleWriteItem(command, input);
    if (item === undefined) return send();
    if ((this.held.get(item) ?? 0) > 0) {
      this.conflicts.push({ command, items: [item] });
      throw new TransactionConflictException({
        message: 'Transaction is ongoing for the item',
        $metadata: metadata,
      });
    }
    this.writing.set(item, (this.writing.get(item) ?? 0) + 1);
    try {
      return await send();
    } finally {
      const left = (this.writing.get(item) ?? 1) - 1;
      if (left > 0) this.writing.set(item, left);
      else this.writing.delete(item);
    }
  }

  /** Items currently held by transactions in flight. */
  heldItems(): string[] {
    return [...this.held.keys()];
  }
}

/**
 * At most `max` calls of the client in flight; the others wait before anything else on its stack
 * (added first, at high priority: outermost), holding nothing, so no emulator sees a call that
 * waits. DynamoDB Local answers in one process: a flood of hundreds would queue inside it, which
 * DynamoDB itself would not do.
 */
export function limitInFlight(doc: DynamoDBDocumentClient, max: number): void {
  let inFlight = 0;
  const waiting: (() => void)[] = [];
  doc.middlewareStack.add(
    (next) => async (args) => {
      if (inFlight >= max) await new Promise<void>((resolve) => waiting.push(resolve));
      inFlight++;
      try {
        return await next(args);
      } finally {
        inFlight--;
        waiting.shift()?.();
      }
    },
    { step: 'initialize', name: 'maxInFlight', priority: 'high' },
  );
}
