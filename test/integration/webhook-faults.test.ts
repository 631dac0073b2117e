/**
 * The pipeline under crashes and timeouts at every step of the relay and of the deliverer: a DynamoDB
 * call or a queue call that fails before it is applied, or after it was applied with the answer lost
 * (what a Lambda timeout or crash right after the call looks like), and a receiver that does not answer
 * within the deadline. Lambda's retries are the local runner's: a failed stream batch is offered again,
 * a failed message comes back after its visibility timeout.
 *
 * What must hold in every case: the event is delivered at least once, every delivery of it carries one
 * `webhook-id` (so a receiver that dedupes on it processes it once), the webhook event ends succeeded
 * with its last attempt recorded, nothing is lost to a dead-letter queue, and nothing is recorded twice.
 */

import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { keys } from '#shared/data/table.ts';
import type { DeliveryQueue } from '#shared/queue/queue.ts';
import { webhookEventId } from '#shared/webhooks/events.ts';
import { outboxOf } from '../support/outbox.ts';
import { loopbackEndpoint, startTestPipeline } from '../support/pipeline.ts';
// On a DynamoDB Local of its own: it reads its table's stream (test/support/private-engine.ts).
import { usePrivateEngine } from '../support/private-engine.ts';
import { startReceiver } from '../support/receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, functionClients } from '../support/world.ts';

usePrivateEngine();

type Step =
  | { fn: 'webhook-relay' | 'webhook-deliverer'; command: string; when: 'before' | 'after' }
  | { queue: 'sendBatch' | 'changeVisibility'; when: 'before' | 'after' }
  | { receiver: 'no answer in time' };

const label = (step: Step) =>
  'fn' in step
    ? `${step.fn} ${step.command} (${step.when === 'before' ? 'crash before it' : 'applied, then crash'})`
    : 'queue' in step
      ? `queue ${step.queue} (${step.when === 'before' ? 'crash before it' : 'applied, then crash'})`
      : `receiver: ${step.receiver}`;

const steps: Step[] = [
  ...(['before', 'after'] as const).flatMap((when): Step[] => [
    { fn: 'webhook-relay', command: 'QueryCommand', when },
    { fn: 'webhook-relay', command: 'PutItemCommand', when },
    { queue: 'sendBatch', when },
    { fn: 'webhook-deliverer', command: 'BatchGetItemCommand', when },
    { fn: 'webhook-deliverer', command: 'TransactWriteItemsCommand', when },
    { queue: 'changeVisibility', when },
  ]),
  { receiver: 'no answer in time' },
];

class Crash extends Error {
  override name = 'Crash';
}

/** Fails the first call of `command` (before sending it, or after its answer came). */
function crashOnce(
  doc: DynamoDBDocumentClient,
  command: string,
  when: 'before' | 'after',
  fired: { done: boolean },
) {
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String((context as { commandName?: string }).commandName);
      if (fired.done || name !== command) return next(args);
      fired.done = true;
      if (when === 'after') await next(args);
      throw new Crash(`injected ${when} ${command}`);
    },
    { step: 'initialize', name: 'crashOnce' },
  );
}

function crashingQueue(
  queue: DeliveryQueue,
  method: 'sendBatch' | 'changeVisibility',
  when: 'before' | 'after',
  fired: { done: boolean },
): DeliveryQueue {
  const wrapped = { ...queue } as DeliveryQueue;
  for (const name of ['send', 'sendBatch', 'receive', 'delete', 'changeVisibility'] as const) {
    (wrapped as unknown as Record<string, unknown>)[name] = (
      queue[name] as (...a: unknown[]) => unknown
    ).bind(queue);
  }
  const original = wrapped[method] as (...a: unknown[]) => Promise<void>;
  (wrapped as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    if (fired.done) return original(...args);
    fired.done = true;
    if (when === 'after') await original(...args);
    throw new Crash(`injected ${when} ${method}`);
  };
  return wrapped;
}

async function scenario(step: Step): Promise<void> {
  const world = await createWorld('webhook-faults');
  const fired = { done: false };
  const clients = functionClients({
    endpointFor: world.iam.endpointFor,
    tableName: world.table.name,
    webhooks: world.admin.webhooks,
  });
  const depsFor = (name: string) => {
    const deps = clients.depsFor(name);
    if ('fn' in step && step.fn === name && !(deps as { armed?: boolean }).armed) {
      crashOnce(deps.table.doc, step.command, step.when, fired);
      (deps as { armed?: boolean }).armed = true;
    }
    return deps;
  };
  // The retry path (ChangeMessageVisibility) runs only after a failed attempt: the first answer is a 500 there.
  const firstFails = 'queue' in step && step.queue === 'changeVisibility';
  const hangs = 'receiver' in step;
  const receiver = await startReceiver((n) => (n === 0 && firstFails ? 500 : 200));
  // The receiver that does not answer holds the first request until the case ends: the deliverer's
  // deadline (short here, and only here) always passes first, however loaded the machine.
  const hanging = hangs ? await hangingOnce(receiver.url) : undefined;
  const pipeline = await startTestPipeline(world, {
    depsFor,
    // What each case checks is the end state: the waits (a visibility timeout, the retry ladder's
    // first rung) pass on the queue's clock, skipped while the pipeline is idle.
    skipIdleTime: true,
    ...(hangs ? { deliverer: { timeoutMs: 1_000 } } : {}),
    ...('queue' in step ? { wrapQueue: (q) => crashingQueue(q, step.queue, step.when, fired) } : {}),
  });
  try {
    const url = hanging?.url ?? receiver.url;
    const { endpoint } = await loopbackEndpoint(world, url, ['customer.created']);
    const created = await world.call('POST', '/v1/customers/', {
      token: world.demo.personal_access_token,
      body: { email: `faults-${Date.now()}@example.com` },
    });
    expect(created.status).toBe(201);
    const [event] = await outboxOf(world.table, 'customer', created.body.id);
    const id = webhookEventId(event?.id as string, endpoint.id);
    await waitFor(() => receiver.deliveries.length > (firstFails ? 1 : 0), 20_000, 'a delivery');
    // Every case ends delivered: the queue drains once the outcome is recorded. settled() alone does
    // not wait for a message in flight (a deliverer that crashed after sending holds one until its
    // visibility timeout ends).
    await waitFor(() => pipeline.queue.size === 0, 20_000, 'the delivery queue to drain');
    await pipeline.settled();
    const stored =
      (
        await world.table.doc.send(
          new QueryCommand({
            TableName: world.table.name,
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': keys.webhookEvent(id).PK },
            ConsistentRead: true,
          }),
        )
      ).Items ?? [];
    const webhookEvent = stored.find((item) => item.SK === keys.webhookEvent(id).SK);
    const attempts = stored.filter((item) => String(item.SK).startsWith('ATTEMPT#'));
    // The fault did happen (a hanging receiver always does).
    expect(fired.done || hangs).toBe(true);
    expect(new Set(receiver.deliveries.map((d) => d.headers['webhook-id']))).toEqual(new Set([id]));
    expect(new Set(receiver.deliveries.map((d) => d.body)).size).toBe(1);
    expect(webhookEvent).toMatchObject({ status: 'succeeded', last_http_code: 200 });
    expect(attempts.length).toBe(webhookEvent?.attempts);
    expect(attempts.at(-1)).toMatchObject({ succeeded: true, http_code: 200 });
    expect(pipeline.deadLetter.size).toBe(0);
  } finally {
    await pipeline.stop();
    await hanging?.close();
    await receiver.close();
    clients.destroy();
    await world.drop();
  }
}

/** A proxy whose first request is never answered (until `close`); later ones go to `target`. */
async function hangingOnce(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const { createServer } = await import('node:http');
  let first = true;
  const server = createServer((req, res) => {
    if (first) {
      first = false;
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const forwarded = await fetch(target, {
        method: 'POST',
        headers: Object.fromEntries(
          Object.entries(req.headers)
            .filter(([k]) => k.startsWith('webhook-') || k === 'content-type')
            .map(([k, v]) => [k, String(v)]),
        ),
        body: Buffer.concat(chunks),
      });
      res.writeHead(forwarded.status).end(await forwarded.text());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('the webhook pipeline under a crash or timeout at each step', () => {
  // The deliverer logs each injected crash for operators; keep the output readable.
  let errors: ReturnType<typeof vi.spyOn>;
  beforeAll(() => {
    errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  });
  afterAll(() => errors.mockRestore());

  it.each(steps.map((step) => [label(step), step] as const))(
    '%s: delivered, one webhook-id, nothing lost',
    async (_, step) => {
      await scenario(step);
    },
    40_000,
  );
});
