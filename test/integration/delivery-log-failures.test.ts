/**
 * The delivery log refusing an attempt after its POST went out (issue 25: a delivery list partition
 * at its 10 GB item-collection limit made every attempt's record fail after the POST, and the
 * receiver got the same delivery up to 15 times). Injected: every transaction of the deliverer is
 * cancelled by DynamoDB with `ItemCollectionSizeLimitExceeded`, as DynamoDB answers it.
 */
// On a DynamoDB Local of its own: it reads its table's stream (test/support/private-engine.ts).

import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keys } from '#shared/data/table.ts';
import { webhookEventId } from '#shared/webhooks/events.ts';
import { outboxOf } from '../support/outbox.ts';
import { loopbackEndpoint, startTestPipeline, type TestPipeline } from '../support/pipeline.ts';
import { usePrivateEngine } from '../support/private-engine.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type FunctionClients, functionClients, type World } from '../support/world.ts';

usePrivateEngine();

/** DynamoDB's answer to a transaction one of whose items would pass the 10 GB item collection. */
function itemCollectionFull(items: number): Error {
  return Object.assign(new Error('Transaction cancelled'), {
    name: 'TransactionCanceledException',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: Array.from({ length: items }, (_, i) => ({
      Code: i === items - 1 ? 'ItemCollectionSizeLimitExceeded' : 'None',
    })),
  });
}

let world: World;
let clients: FunctionClients;
let pipeline: TestPipeline;
let receiver: Receiver;
const refused = { transactions: 0 };
beforeAll(async () => {
  world = await createWorld('delivery-log-failures');
  clients = functionClients({
    endpointFor: world.iam.endpointFor,
    tableName: world.table.name,
    webhooks: world.admin.webhooks,
    configure: (doc, name) => {
      if (name !== 'webhook-deliverer') return;
      doc.middlewareStack.add(
        (next, context) => async (args) => {
          if ((context as { commandName?: string }).commandName !== 'TransactWriteItemsCommand')
            return next(args);
          refused.transactions++;
          const items = (args.input as { TransactItems?: unknown[] }).TransactItems?.length ?? 1;
          throw itemCollectionFull(items);
        },
        { step: 'initialize', name: 'itemCollectionFull' },
      );
    },
  });
  receiver = await startReceiver(() => 200);
  pipeline = await startTestPipeline(world, { depsFor: clients.depsFor });
});
afterAll(async () => {
  await pipeline?.stop();
  await receiver?.close();
  clients?.destroy();
  await world?.drop();
});

it('an attempt the log refuses after the POST is not sent again: the event is settled alone, once', async () => {
  const { endpoint } = await loopbackEndpoint(world, receiver.url, ['customer.created']);
  const created = await world.call('POST', '/v1/customers/', {
    token: world.demo.personal_access_token,
    body: { email: `log-full-${Date.now()}@example.com` },
  });
  expect(created.status).toBe(201);
  const [event] = await outboxOf(world.table, 'customer', created.body.id);
  const id = webhookEventId(event?.id as string, endpoint.id);
  await waitFor(() => receiver.deliveries.length > 0, 20_000, 'the delivery');
  // Nothing left for it in the queue (visible or delayed): nothing more can be sent.
  await pipeline.drained({ webhookEventId: id });
  expect(refused.transactions).toBeGreaterThan(0);
  expect(receiver.deliveries).toHaveLength(1);
  const stored = await world.table.doc.send(
    new GetCommand({ TableName: world.table.name, Key: keys.webhookEvent(id), ConsistentRead: true }),
  );
  expect(stored.Item).toMatchObject({ status: 'succeeded', attempts: 1, last_http_code: 200 });
  expect(pipeline.deadLetter.size).toBe(0);
});
