/**
 * The webhook pipeline over a test world: its table's stream polled, the real relay and deliverer
 * handlers, each under its own function's IAM policy (the world's proxy), an in-process queue with SQS's
 * semantics. Endpoints pointing at loopback receivers, with `whsec_` secrets sealed as the admin CLI does.
 */
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
}

export interface TestPipelineOptions {
  /** Over the deliverer's dependencies (a clock, a guard, a shorter deadline). */
  deliverer?: Partial<DelivererDependencies>;
  /** Wrap the handlers (fault injection). */
  wrapRelay?: (relay: TestPipeline['relay']) => TestPipeline['relay'];
  wrapDeliver?: (deliver: TestPipeline['deliver']) => TestPipeline['deliver'];
  visibilityTimeoutSeconds?: number;
  /** The functions' dependencies; default the world's (its IAM proxy, its clients). */
  depsFor?: DepsFor;
  /** The queue as the relay and deliverer see it (fault injection); the pipeline pumps the real one. */
  wrapQueue?: (queue: DeliveryQueue) => DeliveryQueue;
}

export async function startTestPipeline(
  world: World,
  options: TestPipelineOptions = {},
): Promise<TestPipeline> {
  const deadLetter = new LocalQueue({ visibilityTimeoutSeconds: 30 });
  const queue = new LocalQueue({
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 2,
    maxReceiveCount: 15,
    deadLetter,
  });
  const depsFor = options.depsFor ?? world.depsFor;
  const seen = options.wrapQueue ? options.wrapQueue(queue) : queue;
  const relay = createRelay({ ...depsFor('webhook-relay'), queue: seen });
  const delivererDeps = depsFor('webhook-deliverer');
  const deliver = createDeliverer({
    ...delivererDeps,
    // Its key set (the stack grants it one); receivers on loopback, which the deployed guard refuses.
    webhooks: { ...delivererDeps.webhooks, addresses: { allowLoopback: true } },
    queue: seen,
    // The shortest wait of each rung of the ladder: the first retry comes 3 s after the failure.
    random: () => 0,
    timeoutMs: 2_000,
    ...options.deliverer,
  });
  const errors: unknown[] = [];
  const pipeline = await startLocalPipeline({
    dynamodbEndpoint: dynamodbEndpoint(),
    tableName: world.table.name,
    region: LOCAL_REGION,
    relay: options.wrapRelay ? options.wrapRelay(relay) : relay,
    deliver: options.wrapDeliver ? options.wrapDeliver(deliver) : deliver,
    queue,
    pollMs: 25,
    onError: (error) => errors.push(error),
  });
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
  return { ...pipeline, drained, queue, deadLetter, errors, relay, deliver };
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
