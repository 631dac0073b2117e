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

export async function startLocalPipeline(options: LocalPipelineOptions): Promise<LocalPipeline> {
  const stream = await openStreamReader({
    dynamodbEndpoint: options.dynamodbEndpoint,
    region: options.region,
    tableName: options.tableName,
    from: 'TRIM_HORIZON',
    discoveryMs: SHARD_DISCOVERY_MS,
  });
  const pollMs = options.pollMs ?? 50;
  let stopped = false;
  let relayedRecords = 0;
  let aggregatedRecords = 0;
  let aggregatorQuietRounds = 0;
  /** Rounds of the stream loop that read nothing new, and of the queue loop that found nothing. */
  let streamQuietRounds = 0;
  let queueQuietRounds = 0;

  /** A page of the stream to the relay, as its mapping would hand it over. */
  async function relayPage(page: StreamRecord[]): Promise<void> {
    const records = page.filter(matchesRelayFilter);
    if (records.length === 0) return;
    const event: DynamoDBStreamEvent = {
      Records: records.map((r) => ({ ...(r as DynamoDBRecord), eventSourceARN: stream.streamArn })),
    };
    // Lambda retries a failed stream batch before reading further: so do we (the reader stays
    // on this page while this throws).
    for (;;) {
      try {
        await options.relay(event);
        relayedRecords += records.length;
        return;
      } catch (error) {
        options.onError?.(error);
        if (stopped) throw error;
        await sleep(pollMs * 4);
      }
    }
  }

  const streamLoop = (async () => {
    while (!stopped) {
      try {
        streamQuietRounds = (await stream.readOnce(relayPage)) > 0 ? 0 : streamQuietRounds + 1;
      } catch (error) {
        if (!stopped) options.onError?.(error);
      }
      if (!stopped) await sleep(pollMs);
    }
  })();
  const aggregate = options.aggregate;
  const aggregatorStream = aggregate
    ? await openStreamReader({
        dynamodbEndpoint: options.dynamodbEndpoint,
        region: options.region,
        tableName: options.tableName,
        from: 'TRIM_HORIZON',
        discoveryMs: SHARD_DISCOVERY_MS,
      })
    : undefined;
  /** A page of one shard to the aggregator, as its mapping would hand it over (with the shard id). */
  async function aggregatePage(page: StreamRecord[], shardId: string): Promise<void> {
    const records = page.filter(matchesAggregatorFilter);
    if (records.length === 0 || !aggregate) return;
    const event = {
      Records: records.map((r) => ({ ...(r as DynamoDBRecord), eventSourceARN: stream.streamArn })),
      shardId,
    };
    for (;;) {
      try {
        await aggregate(event);
        aggregatedRecords += records.length;
        return;
      } catch (error) {
        options.onError?.(error);
        if (stopped) throw error;
        await sleep(pollMs * 4);
      }
    }
  }
  const aggregatorLoop = (async () => {
    if (!aggregatorStream) {
      aggregatorQuietRounds = Number.POSITIVE_INFINITY;
      return;
    }
    while (!stopped) {
      try {
        aggregatorQuietRounds =
          (await aggregatorStream.readOnce(aggregatePage)) > 0 ? 0 : aggregatorQuietRounds + 1;
      } catch (error) {
        if (!stopped) options.onError?.(error);
      }
      if (!stopped) await sleep(pollMs);
    }
  })();
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
      streamQuietRounds = 0;
      queueQuietRounds = 0;
      if (aggregatorStream) aggregatorQuietRounds = 0;
      while (streamQuietRounds < 2 || queueQuietRounds < 2 || aggregatorQuietRounds < 2) {
        if (Date.now() > deadline) throw new Error('the local webhook pipeline did not settle');
        await sleep(pollMs);
      }
    },
    relayed: () => relayedRecords,
    aggregated: () => aggregatedRecords,
    async stop() {
      stopped = true;
      await Promise.all([streamLoop, queueLoop, aggregatorLoop]);
      stream.close();
      aggregatorStream?.close();
    },
  };
}
