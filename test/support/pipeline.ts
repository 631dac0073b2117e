/**
 * The webhook pipeline over a test world: its table's stream polled, the real relay and deliverer
 * handlers, each under its own function's IAM policy (the world's proxy), an in-process queue with SQS's
 * semantics. Endpoints pointing at loopback receivers, with `whsec_` secrets sealed as the admin CLI does.
 */
import { createHandler as createAggregator } from '#functions/meter-aggregator/handler.ts';
import { createHandler as createDeliverer } from '#functions/webhook-deliverer/handler.ts';
import { createHandler as createRelay } from '#functions/webhook-relay/handler.ts';
import { type LocalPipeline, startLocalPipeline } from '#scripts/local/pipeline.ts';
import type { WebhookEndpointRecord } from '#shared/data/records.ts';
import { replaceWebhookEndpoint, softDeleteWebhookEndpoint } from '#shared/data/webhooks.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import type { DeliveryQueue } from '#shared/queue/queue.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { openWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import type { DelivererDependencies } from '#shared/webhooks/deliver.ts';
import { dynamodbEndpoint, LOCAL_REGION } from './dynamodb.ts';
import { waitFor } from './wait.ts';
import type { DepsFor, World } from './world.ts';

export interface TestPipeline extends LocalPipeline {
  /**
   * Settled, and no message for this endpoint (or webhook event) left in the queue, visible or
   * delayed: nothing more can be sent to it until something new is written. What "nothing more is
   * sent" checks wait for, never a fixed time. Other tests' endpoints may still be retrying.
   */
  drained(of: { endpointId?: string; webhookEventId?: string }, timeoutMs?: number): Promise<void>;
  queue: LocalQueue;
  deadLetter: LocalQueue;
  errors: unknown[];
  relay: ReturnType<typeof createRelay>;
  deliver: ReturnType<typeof createDeliverer>;
  /** The meter aggregator, when the pipeline runs it (`aggregate`). */
  aggregate?: ReturnType<typeof createAggregator>;
  /**
   * The waits the functions set on messages (ChangeMessageVisibility: the retry ladder), in seconds,
   * for the messages of this webhook event: what a test of the retry's timing checks, not a clock.
   */
  retryDelays(webhookEventId: string): number[];
  /** Milliseconds the queue's clock skipped while the pipeline was idle (`skipIdleTime`), or `advance`d. */
  skipped(): number;
  /** Moves the queue's clock ahead now (what waits that long comes back). */
  advance(ms: number): void;
  /** No relay or deliverer call is running (when `skipIdleTime` would skip). */
  idle(): boolean;
}

export interface TestPipelineOptions {
  /** Over the deliverer's dependencies (a clock, a guard, a shorter deadline). */
  deliverer?: Partial<DelivererDependencies>;
  /** Wrap the handlers (fault injection). */
  wrapRelay?: (relay: TestPipeline['relay']) => TestPipeline['relay'];
  wrapDeliver?: (deliver: TestPipeline['deliver']) => TestPipeline['deliver'];
  /**
   * Also run the meter aggregator on its own stream reader, as `npm start` does (usage events into
   * customer meters, and their customers' `customer.state_changed`); wrapped, when a function is given.
   */
  aggregate?:
    | true
    | ((aggregate: NonNullable<TestPipeline['aggregate']>) => NonNullable<TestPipeline['aggregate']>);
  visibilityTimeoutSeconds?: number;
  /**
   * Deliverer batches at once; default one. `npm start` runs `LOCAL_CONCURRENT_BATCHES` with a 30 s
   * visibility timeout; these tests' 2 s (a crashed delivery comes back quickly) is shorter than a
   * slow batch, so a second batch would receive a message the first is still handling.
   */
  concurrentBatches?: number;
  /** The functions' dependencies; default the world's (its IAM proxy, its clients). */
  depsFor?: DepsFor;
  /** The queue as the relay and deliverer see it (fault injection); the pipeline pumps the real one. */
  wrapQueue?: (queue: DeliveryQueue) => DeliveryQueue;
  /**
   * The queue's clock skips ahead while the pipeline is idle (no relay or deliverer call running, a
   * message waiting out a visibility timeout or a retry delay), instead of the test waiting in real
   * time: for tests that check what happens in the end, not when. Off by default: a test that looks
   * between an attempt and its retry needs the retry to stay seconds away.
   */
  skipIdleTime?: boolean;
}

/**
 * How long a test deliverer waits for a receiver. The receivers of these tests answer at once, so
 * this is a deadline for a hang, not a race with the receiver: with 2 s, a loaded machine made a
 * prompt answer time out, and the deliverer retried a delivery that had arrived (an extra attempt
 * counted in webhook-deliveries). A test of the timeout itself sets a short one and a receiver that
 * never answers (webhook-faults.test.ts).
 */
export const TEST_DELIVERY_TIMEOUT_MS = 20_000;
/** Queue time skipped per idle poll when `skipIdleTime` is on. */
const SKIP_PER_POLL_MS = 500;

export async function startTestPipeline(
  world: World,
  options: TestPipelineOptions = {},
): Promise<TestPipeline> {
  let skew = 0;
  const now = () => Date.now() + skew;
  const deadLetter = new LocalQueue({ visibilityTimeoutSeconds: 30, now });
  const queue = new LocalQueue({
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 2,
    maxReceiveCount: 15,
    deadLetter,
    now,
  });
  const depsFor = options.depsFor ?? world.depsFor;
  const delays = recordedDelays(queue);
  const seen = options.wrapQueue ? options.wrapQueue(delays.queue) : delays.queue;
  const relay = createRelay({ ...depsFor('webhook-relay'), queue: seen });
  const aggregate = options.aggregate ? createAggregator(depsFor('meter-aggregator')) : undefined;
  const delivererDeps = depsFor('webhook-deliverer');
  const deliver = createDeliverer({
    ...delivererDeps,
    // Its key set (the stack grants it one); receivers on loopback, which the deployed guard refuses.
    webhooks: { ...delivererDeps.webhooks, addresses: { allowLoopback: true } },
    queue: seen,
    // The shortest wait of each rung of the ladder: the first retry comes 3 s after the failure.
    random: () => 0,
    timeoutMs: TEST_DELIVERY_TIMEOUT_MS,
    ...options.deliverer,
  });
  const errors: unknown[] = [];
  /** Relay and deliverer calls running: the queue's clock never skips under one. */
  let running = 0;
  const counted =
    <E, R>(handler: (event: E) => Promise<R>) =>
    async (event: E): Promise<R> => {
      running += 1;
      try {
        return await handler(event);
      } finally {
        running -= 1;
      }
    };
  const pipeline = await startLocalPipeline({
    dynamodbEndpoint: dynamodbEndpoint(),
    tableName: world.table.name,
    region: LOCAL_REGION,
    relay: counted(options.wrapRelay ? options.wrapRelay(relay) : relay),
    deliver: counted(options.wrapDeliver ? options.wrapDeliver(deliver) : deliver),
    ...(aggregate
      ? {
          aggregate: counted(
            typeof options.aggregate === 'function' ? options.aggregate(aggregate) : aggregate,
          ),
        }
      : {}),
    // Pumped through the recorder, which learns each receipt's body as Lambda's mapping receives it.
    queue: delays.queue,
    concurrentBatches: options.concurrentBatches ?? 1,
    pollMs: 25,
    onError: (error) => errors.push(error),
  });
  const skipper = options.skipIdleTime
    ? setInterval(() => {
        if (running === 0 && queue.size > 0) skew += SKIP_PER_POLL_MS;
      }, 25)
    : undefined;
  const drained: TestPipeline['drained'] = async (of, timeoutMs = 20_000) => {
    await pipeline.settled(timeoutMs);
    const pending = () =>
      queue.bodies().some((body) => {
        const message = JSON.parse(body) as { endpoint_id?: string; webhook_event_id?: string };
        return (
          (of.endpointId !== undefined && message.endpoint_id === of.endpointId) ||
          (of.webhookEventId !== undefined && message.webhook_event_id === of.webhookEventId)
        );
      });
    await waitFor(() => !pending(), timeoutMs, `no queued message for ${JSON.stringify(of)}`);
  };
  return {
    ...pipeline,
    stop: async () => {
      clearInterval(skipper);
      await pipeline.stop();
    },
    drained,
    queue,
    deadLetter,
    errors,
    relay,
    deliver,
    ...(aggregate ? { aggregate } : {}),
    retryDelays: delays.of,
    skipped: () => skew,
    advance: (ms) => {
      skew += ms;
    },
    idle: () => running === 0,
  };
}

/** The queue as the functions see it, recording each ChangeMessageVisibility with its message's body. */
function recordedDelays(queue: DeliveryQueue): {
  queue: DeliveryQueue;
  of: (webhookEventId: string) => number[];
} {
  const bodies = new Map<string, string>();
  const changes: { body: string; seconds: number }[] = [];
  const recording: DeliveryQueue = {
    send: (body, options) => queue.send(body, options),
    sendBatch: (messages) => queue.sendBatch(messages),
    delete: (receiptHandle) => queue.delete(receiptHandle),
    receive: async (options) => {
      const messages = await queue.receive(options);
      for (const message of messages) bodies.set(message.receiptHandle, message.body);
      return messages;
    },
    changeVisibility: async (receiptHandle, seconds) => {
      await queue.changeVisibility(receiptHandle, seconds);
      changes.push({ body: bodies.get(receiptHandle) ?? '', seconds });
    },
  };
  const of = (webhookEventId: string) =>
    changes
      .filter(({ body }) => {
        try {
          return (JSON.parse(body) as { webhook_event_id?: string }).webhook_event_id === webhookEventId;
        } catch {
          return false;
        }
      })
      .map(({ seconds }) => seconds);
  return { queue: recording, of };
}

/**
 * An endpoint at `url` (loopback http, which the test deliverer may reach), created as the API
 * creates one (its secret sealed under the world's key set, its list entries with it), of the demo
 * organization or another; then disabled by its owner or deleted, if asked.
 */
export async function loopbackEndpoint(
  world: World,
  url: string,
  events: string[],
  options: { organizationId?: string; enabled?: false; deleted?: true } = {},
): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  const deps: Dependencies = {
    ...world.admin,
    webhooks: { ...world.admin.webhooks, addresses: { allowLoopback: true } },
  };
  const opened = await openWebhookEndpoint(deps, options.organizationId ?? world.demo.organization_id, {
    url,
    name: 'test receiver',
    format: 'raw',
    events,
  });
  let endpoint = opened.endpoint;
  if (options.enabled === false) {
    const disabled: WebhookEndpointRecord = {
      ...endpoint,
      enabled: false,
      disabled_reason: 'disabled_by_user',
      revision: endpoint.revision + 1,
    };
    await replaceWebhookEndpoint(world.table, endpoint, disabled);
    endpoint = disabled;
  }
  if (options.deleted) await softDeleteWebhookEndpoint(world.table, endpoint, new Date().toISOString());
  return { endpoint, secret: opened.secret };
}
