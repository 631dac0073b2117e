/**
 * The delivery queue's semantics, one scenario list run against Amazon SQS's API (moto's server,
 * preinstalled on our machines) and against the in-process queue `npm start` uses: what the
 * deliverer relies on (visibility, receive counts, changed visibility, redrive to the dead-letter
 * queue, delayed sends, deletes) must hold on both, or the local pipeline proves nothing.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Moto, startMoto } from '#scripts/deploy/moto.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import type { DeliveryQueue } from '#shared/queue/queue.ts';
import { sqsQueue } from '#shared/queue/sqs.ts';

const VISIBILITY = 1;
const MAX_RECEIVES = 2;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Just past one visibility timeout. */
const afterVisibility = () => sleep(VISIBILITY * 1000 + 300);

interface Pair {
  queue: DeliveryQueue;
  deadLetter: DeliveryQueue;
}

let moto: Moto;
let client: SQSClient;
let created = 0;

beforeAll(async () => {
  mkdirSync(join(process.cwd(), '.local'), { recursive: true });
  moto = await startMoto(join(process.cwd(), '.local', 'moto-queue.log'));
  client = new SQSClient({
    endpoint: moto.endpoint,
    region: 'eu-west-3',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
}, 60_000);
afterAll(async () => {
  client?.destroy();
  await moto?.stop();
});

async function sqsPair(): Promise<Pair> {
  const name = `deliveries-${++created}`;
  const dlq = await client.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqArn = (
    await client.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes?.QueueArn;
  const queue = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(VISIBILITY),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: MAX_RECEIVES }),
      },
    }),
  );
  return {
    queue: sqsQueue(client, queue.QueueUrl as string),
    deadLetter: sqsQueue(client, dlq.QueueUrl as string),
  };
}

function localPair(): Pair {
  const deadLetter = new LocalQueue({ visibilityTimeoutSeconds: 30 });
  return {
    queue: new LocalQueue({
      visibilityTimeoutSeconds: VISIBILITY,
      maxReceiveCount: MAX_RECEIVES,
      deadLetter,
    }),
    deadLetter,
  };
}

describe.each([
  ['Amazon SQS API (moto)', sqsPair],
  ['in-process queue', async () => localPair()],
] as const)('%s', (_, makePair) => {
  it('a received message is invisible until its visibility timeout, then comes back counted', async () => {
    const { queue } = await makePair();
    await queue.send('{"n":1}');
    const [first, ...none] = await queue.receive();
    expect(none).toEqual([]);
    expect(first).toMatchObject({ body: '{"n":1}', receiveCount: 1 });
    expect(await queue.receive()).toEqual([]);
    await afterVisibility();
    const [again] = await queue.receive();
    expect(again).toMatchObject({ messageId: first?.messageId, receiveCount: 2 });
    expect(again?.receiptHandle).not.toBe(first?.receiptHandle);
  });

  it('a deleted message never comes back', async () => {
    const { queue } = await makePair();
    await queue.send('done');
    const [message] = await queue.receive();
    await queue.delete(message?.receiptHandle as string);
    await afterVisibility();
    expect(await queue.receive()).toEqual([]);
  });

  it('changeVisibility sets when it comes back: 0 at once, longer than the queue default', async () => {
    const { queue } = await makePair();
    await queue.send('retry');
    const [first] = await queue.receive();
    await queue.changeVisibility(first?.receiptHandle as string, 0);
    const [second] = await queue.receive();
    expect(second).toMatchObject({ body: 'retry', receiveCount: 2 });
    await queue.changeVisibility(second?.receiptHandle as string, 3);
    await afterVisibility();
    expect(await queue.receive()).toEqual([]);
  });

  it(`after ${MAX_RECEIVES} receives without a delete the message moves to the dead-letter queue`, async () => {
    const { queue, deadLetter } = await makePair();
    await queue.send('poison');
    for (let i = 1; i <= MAX_RECEIVES; i++) {
      const [message] = await queue.receive();
      expect(message).toMatchObject({ body: 'poison', receiveCount: i });
      await queue.changeVisibility(message?.receiptHandle as string, 0);
    }
    expect(await queue.receive()).toEqual([]);
    const [dead] = await deadLetter.receive();
    expect(dead?.body).toBe('poison');
  });

  it('a delayed send stays invisible for its delay', async () => {
    const { queue } = await makePair();
    await queue.send('later', { delaySeconds: 1 });
    expect(await queue.receive()).toEqual([]);
    await sleep(1300);
    expect((await queue.receive()).map((m) => m.body)).toEqual(['later']);
  });

  it('sendBatch sends every message once, more than one batch of ten included', async () => {
    const { queue } = await makePair();
    const bodies = Array.from({ length: 23 }, (_, i) => `{"n":${i}}`);
    await queue.sendBatch(bodies);
    const received: string[] = [];
    for (let round = 0; round < 10 && received.length < bodies.length; round++) {
      for (const message of await queue.receive({ max: 10 })) {
        received.push(message.body);
        await queue.delete(message.receiptHandle);
      }
    }
    expect(received.sort()).toEqual([...bodies].sort());
  });
});
