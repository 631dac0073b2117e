/**
 * The webhook pipeline as AWS runs it, in process: DynamoDB Local's stream polled as Lambda's event
 * source mapping polls a table stream (the same filters: inserts of outbox items, removals of delivery list entries), the relay handler
 * invoked with a Lambda-shaped event, and the deliverer handler fed from an in-process queue with SQS's
 * semantics as Lambda's SQS mapping feeds it (batches of ten, messages not reported as failed deleted,
 * several batches at a time: a slow batch does not stop the queue being read, as on AWS).
 *
 * A batch the relay fails is offered again before the stream is read further (Lambda retries a
 * stream batch until it succeeds); a batch the deliverer fails leaves its messages to come back after
 * their visibility timeout.
 */
import type { DynamoDBRecord, DynamoDBStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { DeliveryQueue, QueueMessage } from '#shared/queue/queue.ts';
import { isAggregatorRecord } from '#shared/services/meter-aggregation.ts';
import { relayRecordKind } from '#shared/webhooks/relay.ts';
import { openStreamReader, type StreamRecord } from './stream-reader.ts';

export type RelayHandler = (event: DynamoDBStreamEvent) => Promise<unknown>;
/** The meter aggregator's handler: a stream batch with its shard id, as a mapping with a tumbling window gives it. */
export type AggregatorHandler = (event: DynamoDBStreamEvent & { shardId?: string }) => Promise<unknown>;
export type DelivererHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

/** Lambda's SQS event source mapping's largest batch for a standard queue without a window. */
const SQS_BATCH = 10;
/**
 * Batches handed over at once: Lambda's SQS mapping starts with five pollers, each invoking the
 * function with its batch while the others go on receiving (then scales up to the mapping's
 * maximum concurrency, 20 here: infra/webhooks.ts). One batch waiting on a slow receiver does not
 * stop the queue.
 */
export const LOCAL_CONCURRENT_BATCHES = 5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the relay's event source mapping hands it (`relayStreamFilters`). */
export const matchesRelayFilter = (record: StreamRecord): boolean => relayRecordKind(record) !== undefined;

/** What the meter aggregator's event source mapping hands it (`aggregatorStreamFilter`). */
export const matchesAggregatorFilter = (record: StreamRecord): boolean => isAggregatorRecord(record);

/** The SQS event Lambda would build for these messages. */
export function sqsEvent(messages: readonly QueueMessage[], queueArn: string): SQSEvent {
  return {
    Records: messages.map((message) => ({
      messageId: message.messageId,
      receiptHandle: message.receiptHandle,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receiveCount),
        SentTimestamp: String(Date.now()),
        SenderId: 'local',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn,
      awsRegion: 'us-east-1',
    })),
  };
}

/**
 * One poll of the queue as Lambda's SQS mapping does it: up to ten messages to the handler, then the
 * ones it did not report as failed deleted. Answers how many messages it handed over.
 */
export async function pumpQueue(
  queue: DeliveryQueue,
  deliver: DelivererHandler,
  queueArn = 'local',
): Promise<number> {
  const messages = await queue.receive({ max: SQS_BATCH });
  if (messages.length === 0) return 0;
  await handBatch(queue, deliver, messages, queueArn);
  return messages.length;
}

/** A received batch to the handler, then the messages it did not report as failed deleted. */
async function handBatch(
  queue: DeliveryQueue,
  deliver: DelivererHandler,
  messages: readonly QueueMessage[],
  queueArn = 'local',
): Promise<void> {
  let failed: Set<string>;
  try {
    const result = await deliver(sqsEvent(messages, queueArn));
    failed = new Set(result.batchItemFailures.map((failure) => failure.itemIdentifier));
  } catch {
    return;
  }
  for (const message of messages) {
    if (!failed.has(message.messageId)) await queue.delete(message.receiptHandle);
  }
}

export interface LocalPipelineOptions {
  /** DynamoDB Local itself (the stream API is not behind the IAM proxy: Lambda's mapping reads it, not the function). */
  dynamodbEndpoint: string;
  tableName: string;
  region: string;
  relay: RelayHandler;
  deliver: DelivererHandler;
  queue: DeliveryQueue;
  /**
   * The meter aggregator: fed by a stream reader of its own (its own mapping on AWS), so that usage
   * events never hold back the relay. Left out, usage events are not aggregated.
   */
  aggregate?: AggregatorHandler;
  pollMs?: number;
  /** Deliverer batches running at once (default `LOCAL_CONCURRENT_BATCHES`). */
  concurrentBatches?: number;
  /** A relay or deliverer failure (logged by `npm start`; tests inspect them). */
  onError?: (error: unknown) => void;
}

export interface LocalPipeline {
  /** Resolves once the stream has been read past every write made before the call and the queue had nothing visible. */
  settled(timeoutMs?: number): Promise<void>;
  /** Stream records handed to the relay so far. */
  relayed(): number;
  /** Stream records handed to the meter aggregator so far. */
  aggregated(): number;
  stop(): Promise<void>;
}

/** Shards are looked for once a second (and whenever one closes), not on every poll. */
const SHARD_DISCOVERY_MS = 1_000;

/** A stream event source mapping run locally (`startMapping`). */
interface LocalMapping {
  /** Rounds that read nothing new (reset by `settled`). */
  quietRounds: number;
  /** Records handed to its function so far. */
  handled: number;
  /** The polling loop, ended by `stop`. */
  loop: Promise<void>;
  close(): void;
}

/**
 * One event source mapping of the table's stream, as Lambda runs it: a reader of its own from
 * TRIM_HORIZON, each shard's pages filtered by the mapping's filter and handed to its function in
 * order, a failed batch handed again before the shard is read further (the reader stays on a page
 * while `handle` throws). `withShardId`: the batch names its shard, as a mapping with a tumbling
 * window gives it.
 */
async function startMapping(
  options: LocalPipelineOptions,
  isStopped: () => boolean,
  filter: (record: StreamRecord) => boolean,
  handler: (event: DynamoDBStreamEvent & { shardId?: string }) => Promise<unknown>,
  withShardId: boolean,
): Promise<LocalMapping> {
  const pollMs = options.pollMs ?? 50;
  const reader = await openStreamReader({
    dynamodbEndpoint: options.dynamodbEndpoint,
    region: options.region,
    tableName: options.tableName,
    from: 'TRIM_HORIZON',
    discoveryMs: SHARD_DISCOVERY_MS,
  });
  async function handPage(page: StreamRecord[], shardId: string): Promise<void> {
    const records = page.filter(filter);
    if (records.length === 0) return;
    const event = {
      Records: records.map((r) => ({ ...(r as DynamoDBRecord), eventSourceARN: reader.streamArn })),
      ...(withShardId ? { shardId } : {}),
    };
    for (;;) {
      try {
        await handler(event);
        mapping.handled += records.length;
        return;
      } catch (error) {
        options.onError?.(error);
        if (isStopped()) throw error;
        await sleep(pollMs * 4);
      }
    }
  }
  const mapping: LocalMapping = {
    quietRounds: 0,
    handled: 0,
    loop: Promise.resolve(),
    close: () => reader.close(),
  };
  mapping.loop = (async () => {
    while (!isStopped()) {
      try {
        mapping.quietRounds = (await reader.readOnce(handPage)) > 0 ? 0 : mapping.quietRounds + 1;
      } catch (error) {
        if (!isStopped()) options.onError?.(error);
      }
      if (!isStopped()) await sleep(pollMs);
    }
  })();
  return mapping;
}

export async function startLocalPipeline(options: LocalPipelineOptions): Promise<LocalPipeline> {
  const pollMs = options.pollMs ?? 50;
  let stopped = false;
  const isStopped = () => stopped;
  /** Rounds of the queue loop that found nothing. */
  let queueQuietRounds = 0;
  // The relay's mapping, and the meter aggregator's (its own reader: usage events never hold back
  // the relay).
  const relay = await startMapping(options, isStopped, matchesRelayFilter, options.relay, false);
  const aggregator = options.aggregate
    ? await startMapping(options, isStopped, matchesAggregatorFilter, options.aggregate, true)
    : undefined;
  const mappings = aggregator ? [relay, aggregator] : [relay];
  const concurrentBatches = options.concurrentBatches ?? LOCAL_CONCURRENT_BATCHES;
  /** Deliverer batches running. */
  const running = new Set<Promise<void>>();
  const queueLoop = (async () => {
    while (!stopped) {
      if (running.size >= concurrentBatches) {
        await Promise.race(running);
        continue;
      }
      let handed = 0;
      try {
        const messages = await options.queue.receive({ max: SQS_BATCH });
        handed = messages.length;
        if (handed > 0) {
          const batch: Promise<void> = handBatch(options.queue, options.deliver, messages)
            .catch((error: unknown) => {
              if (!stopped) options.onError?.(error);
            })
            .finally(() => running.delete(batch));
          running.add(batch);
        }
      } catch (error) {
        if (!stopped) options.onError?.(error);
      }
      // Quiet: nothing handed over and no batch running.
      queueQuietRounds = handed > 0 || running.size > 0 ? 0 : queueQuietRounds + 1;
      if (handed > 0) continue;
      if (!stopped) await sleep(pollMs);
    }
    await Promise.all(running);
  })();

  return {
    async settled(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      queueQuietRounds = 0;
      for (const mapping of mappings) mapping.quietRounds = 0;
      while (queueQuietRounds < 2 || mappings.some((mapping) => mapping.quietRounds < 2)) {
        if (Date.now() > deadline) throw new Error('the local webhook pipeline did not settle');
        await sleep(pollMs);
      }
    },
    relayed: () => relay.handled,
    aggregated: () => aggregator?.handled ?? 0,
    async stop() {
      stopped = true;
      await Promise.all([queueLoop, ...mappings.map((mapping) => mapping.loop)]);
      for (const mapping of mappings) mapping.close();
    },
  };
}
