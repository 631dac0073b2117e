/**
 * DynamoDB's per-partition throughput limit, emulated for tests: a partition key takes at most
 * 1,000 write units in any second (on-demand tables included; adaptive capacity can split a key
 * range, not one partition key's items, and not a range written always at its tail).
 *
 * `PartitionThroughput` is the accountant: a sliding one-second window per partition, the clock
 * injected, a request admitted whole or not at all (a transaction is throttled as a whole). The
 * middleware (`install`) prices each write from the request alone, without reading the table: a
 * put by the size of the item it writes (and the same size on each global index whose keys the item
 * carries, on that index's partition; local-index writes on the item's own), an update, delete or
 * condition check by `sizeOf(key)` when given, else 1 KB (a floor); 2× in a transaction. A refused
 * single write fails with `ProvisionedThroughputExceededException`, a refused transaction with
 * `TransactionCanceledException` whose reasons say `ThrottlingError`, as DynamoDB answers them. It
 * sits above the SDK's retries, so the service code sees the first refusal (the SDK would retry a
 * throttled single write up to its attempts on AWS).
 */
import {
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { tableDefinition } from '#shared/data/table.ts';
import { indexes, itemSize, writeUnits } from './capacity.ts';

export const PARTITION_WCU_PER_SECOND = 1_000;
const WINDOW_MS = 1_000;

export class PartitionThroughput {
  private readonly spent = new Map<string, { at: number; units: number }[]>();

  constructor(
    private readonly now: () => number,
    readonly limit = PARTITION_WCU_PER_SECOND,
  ) {}

  /** Units the partition took in the last second. */
  used(partition: string): number {
    const since = this.now() - WINDOW_MS;
    const entries = (this.spent.get(partition) ?? []).filter((e) => e.at > since);
    this.spent.set(partition, entries);
    return entries.reduce((sum, e) => sum + e.units, 0);
  }

  /** Takes the units from every partition, or from none when one of them would pass the limit; the partitions that refused. */
  admit(units: Map<string, number>): string[] {
    const over = [...units].filter(([partition, n]) => this.used(partition) + n > this.limit).map(([p]) => p);
    if (over.length > 0) return over;
    const at = this.now();
    for (const [partition, n] of units) this.spent.get(partition)?.push({ at, units: n });
    return [];
  }
}

type Input = Record<string, unknown>;
type Key = Record<string, unknown>;
const PK = tableDefinition.partitionKey.name;
const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

export interface WritePricing {
  /** An existing item's size in bytes (updates, deletes, condition checks); 1 KB when not given. */
  sizeOf?: (key: Key) => number;
}

/** The write units a write command puts on each partition, from the request alone. */
export function partitionUnits(
  command: string,
  input: Input,
  pricing: WritePricing = {},
): Map<string, number> {
  const units = new Map<string, number>();
  const add = (partition: string, n: number) => units.set(partition, (units.get(partition) ?? 0) + n);
  const existing = (key: Key) => pricing.sizeOf?.(key) ?? 1024;
  const put = (item: Key, transactional: boolean) => {
    const bytes = itemSize(marshall(item, MARSHALL));
    add(String(item[PK]), writeUnits(bytes, transactional));
    for (const index of indexes) {
      if (item[index.partitionKey.name] === undefined || item[index.sortKey.name] === undefined) continue;
      const partition =
        index.kind === 'local' ? String(item[PK]) : `${index.name}:${String(item[index.partitionKey.name])}`;
      add(partition, writeUnits(index.projection === 'keys' ? 0 : bytes, false));
    }
  };
  const other = (key: Key, transactional: boolean) =>
    add(String(key[PK]), writeUnits(existing(key), transactional));
  switch (command) {
    case 'PutItemCommand':
      put(input.Item as Key, false);
      break;
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      other(input.Key as Key, false);
      break;
    case 'TransactWriteItemsCommand':
      for (const entry of input.TransactItems as Record<string, { Item?: Key; Key?: Key }>[]) {
        if (entry.Put?.Item) put(entry.Put.Item, true);
        else {
          const action = entry.Update ?? entry.Delete ?? entry.ConditionCheck;
          if (action?.Key) other(action.Key, true);
        }
      }
      break;
    default:
      break;
  }
  return units;
}

const metadata = { httpStatusCode: 400, requestId: 'throughput-emulator', attempts: 1, totalRetryDelay: 0 };

export class ThroughputEmulator {
  readonly throttled: { command: string; partitions: string[] }[] = [];

  constructor(
    readonly partitions: PartitionThroughput,
    private readonly pricing: WritePricing = {},
  ) {}

  install(doc: DynamoDBDocumentClient): void {
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        const command = String((context as { commandName?: string }).commandName);
        const input = args.input as Input;
        const units = partitionUnits(command, input, this.pricing);
        if (units.size === 0) return next(args);
        const over = this.partitions.admit(units);
        if (over.length === 0) return next(args);
        this.throttled.push({ command, partitions: over });
        if (command === 'TransactWriteItemsCommand') {
          const items = input.TransactItems as unknown[];
          throw new TransactionCanceledException({
            message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${items.map(() => 'ThrottlingError').join(', ')}]`,
            CancellationReasons: items.map(() => ({
              Code: 'ThrottlingError',
              Message:
                'Throughput exceeds the current capacity for one or more global secondary indexes or partitions',
            })),
            $metadata: metadata,
          });
        }
        throw new ProvisionedThroughputExceededException({
          message: 'The level of configured provisioned throughput for the table was exceeded.',
          $metadata: metadata,
        });
      },
      { step: 'initialize', name: 'partitionThroughputEmulator', priority: 'high' },
    );
  }
}
