/**
 * A table's stream read from DynamoDB Local as Lambda's event source mapping reads one: every shard,
 * each shard's records in order, a parent shard to its end before its children. The local webhook
 * pipeline relays what it reads; the tests' table follower (test/support/table-state.ts) applies it.
 */
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { enableStream } from './create-table.ts';

export type { StreamRecord };

export interface StreamReaderOptions {
  dynamodbEndpoint: string;
  region: string;
  tableName: string;
  /**
   * Where the shards open now are read from: their oldest record (a relay, which owes every
   * write), or the next one written (a reader that has just scanned the table). Shards found
   * later are read from their oldest record.
   */
  from: 'TRIM_HORIZON' | 'LATEST';
  /** Shards are looked for at most this often, and at once when one closes (default: every read). */
  discoveryMs?: number;
}

export interface StreamReader {
  streamArn: string;
  /**
   * One page (GetRecords) from each shard that may be read now. `handle` gets each non-empty page
   * in order; the shard moves past it only when `handle` returns, so a page it throws on is read
   * again. Answers how many records were read. `handle` is told the page's shard too (as Lambda tells
   * a mapping with a tumbling window).
   */
  readOnce(handle: (records: StreamRecord[], shardId: string) => Promise<void> | void): Promise<number>;
  close(): void;
}

interface Shard {
  /** Undefined once the shard is closed and read to its end. */
  iterator: string | undefined;
  parent: string | undefined;
}

type TableStreamOptions = Pick<StreamReaderOptions, 'dynamodbEndpoint' | 'region' | 'tableName'>;

const localClient = (options: TableStreamOptions) => ({
  endpoint: options.dynamodbEndpoint,
  region: options.region,
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

/**
 * Turns the table's stream on if it is off; answers its ARN. Tests create their tables without a
 * stream (DynamoDB Local would record every write of every suite); reading one turns it on.
 * `npm start`'s table has one.
 */
export async function enableTableStream(options: TableStreamOptions): Promise<string> {
  const db = new DynamoDBClient(localClient(options));
  try {
    const { Table } = await db.send(new DescribeTableCommand({ TableName: options.tableName }));
    if (!Table) throw new Error(`no table ${options.tableName}`);
    return await enableStream(db, Table);
  } finally {
    db.destroy();
  }
}

/** Opens the table's stream (turning it on if it is off) and a reader of it. */
export async function openStreamReader(options: StreamReaderOptions): Promise<StreamReader> {
  const client = localClient(options);
  const streamArn = await enableTableStream(options);
  const streams = new DynamoDBStreamsClient(client);
  // Every GetRecords answer would be walked through the SDK's log filter for a logger that drops it.
  streams.middlewareStack.remove('loggerMiddleware');
  const shards = new Map<string, Shard>();
  let nextDiscovery = 0;

  async function discover(start: 'TRIM_HORIZON' | 'LATEST'): Promise<void> {
    if (Date.now() < nextDiscovery) return;
    nextDiscovery = Date.now() + (options.discoveryMs ?? 0);
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      const id = shard.ShardId as string;
      if (shards.has(id)) continue;
      // From the latest record, a shard already closed holds nothing to read.
      if (start === 'LATEST' && shard.SequenceNumberRange?.EndingSequenceNumber) continue;
      const { ShardIterator } = await streams.send(
        new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: id, ShardIteratorType: start }),
      );
      shards.set(id, { iterator: ShardIterator, parent: shard.ParentShardId });
    }
  }
  await discover(options.from);

  /** A child waits until its parent, if this reader follows it, is read to its end. */
  const readable = (shard: Shard) =>
    shard.iterator !== undefined && !shards.get(shard.parent ?? '')?.iterator;

  return {
    streamArn,
    async readOnce(handle) {
      await discover('TRIM_HORIZON');
      let read = 0;
      for (const [shardId, shard] of shards) {
        if (!readable(shard)) continue;
        const page = await streams.send(
          new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }),
        );
        const records = page.Records ?? [];
        if (records.length > 0) await handle(records, shardId);
        read += records.length;
        shard.iterator = page.NextShardIterator;
        // A closed shard: its children are to be found at once.
        if (!shard.iterator) nextDiscovery = 0;
      }
      return read;
    },
    close: () => streams.destroy(),
  };
}
