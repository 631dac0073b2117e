/**
 * The delivery queue's semantics as one scenario list, run against Amazon SQS's API (moto's server:
 * `npm run test:sqs`, test/integration/queue-sqs.test.ts) and against the in-process queue `npm start`
 * uses (test/integration/queue.test.ts, on an injected clock): what the deliverer relies on
 * (visibility, receive counts, changed visibility, redrive to the dead-letter queue, delayed sends,
 * deletes) must hold on both, or the local pipeline proves nothing.
 */
import { describe, expect, it } from 'vitest';
import type { DeliveryQueue } from '#shared/queue/queue.ts';

export const VISIBILITY = 1;
export const MAX_RECEIVES = 2;

export interface Pair {
  queue: DeliveryQueue;
  deadLetter: DeliveryQueue;
}

export interface QueueBackend {
  name: string;
  /** A queue with VISIBILITY seconds of visibility and a redrive after MAX_RECEIVES receives. */
  makePair(): Promise<Pair>;
  /** Let `ms` of the queue's time pass: a real wait on SQS, a clock step in process. */
  pass(ms: number): Promise<void>;
}

export function queueScenarios(backend: QueueBackend): void {
  const { makePair, pass } = backend;
  /** Just past one visibility timeout. */
  const afterVisibility = () => pass(VISIBILITY * 1000 + 300);
  describe(backend.name, () => {
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
      await pass(1300);
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

    it('takes a tenant (MessageGroupId on a standard queue, a fair queue) on send and sendBatch, delays included', async () => {
      const { queue } = await makePair();
      const bodies = Array.from({ length: 12 }, (_, i) => ({ body: `{"g":${i}}`, groupId: `org_${i % 3}` }));
      await queue.sendBatch(bodies);
      await queue.send('{"g":"delayed"}', { groupId: 'org_0', delaySeconds: 1 });
      const received: string[] = [];
      for (let round = 0; round < 10 && received.length < bodies.length; round++) {
        for (const message of await queue.receive({ max: 10 })) {
          received.push(message.body);
          await queue.delete(message.receiptHandle);
        }
      }
      expect(received.sort()).toEqual(bodies.map((b) => b.body).sort());
      await pass(1300);
      expect((await queue.receive({ max: 10 })).map((m) => m.body)).toEqual(['{"g":"delayed"}']);
    });
  });
}
