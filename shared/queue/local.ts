import { randomUUID } from 'node:crypto';
import type { DeliveryQueue, QueueMessage } from './queue.ts';

interface Stored {
  messageId: string;
  body: string;
  receiveCount: number;
  /** Epoch ms from which it can be received. */
  visibleAt: number;
  /** The receipt of its latest receive: older receipts no longer act on it (as in SQS). */
  receipt: string | undefined;
}

export interface LocalQueueOptions {
  visibilityTimeoutSeconds: number;
  /** Receives after which the next receive moves the message to `deadLetter` (SQS redrive policy). */
  maxReceiveCount?: number;
  deadLetter?: LocalQueue;
  now?: () => number;
}

/**
 * An in-process queue with SQS's semantics (see `queue.ts`), for `npm start` and tests: the same
 * scenarios run against it and against a real SQS API (test/integration/queue.test.ts).
 */
export class LocalQueue implements DeliveryQueue {
  private readonly messages = new Map<string, Stored>();
  private readonly options: LocalQueueOptions;
  private readonly now: () => number;

  constructor(options: LocalQueueOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  async send(body: string, options: { delaySeconds?: number } = {}): Promise<void> {
    const messageId = randomUUID();
    this.messages.set(messageId, {
      messageId,
      body,
      receiveCount: 0,
      visibleAt: this.now() + (options.delaySeconds ?? 0) * 1000,
      receipt: undefined,
    });
  }

  async sendBatch(bodies: readonly string[]): Promise<void> {
    for (const body of bodies) await this.send(body);
  }

  async receive(options: { max?: number } = {}): Promise<QueueMessage[]> {
    const max = options.max ?? 10;
    const out: QueueMessage[] = [];
    const now = this.now();
    for (const stored of this.messages.values()) {
      if (out.length >= max) break;
      if (stored.visibleAt > now) continue;
      const { maxReceiveCount, deadLetter } = this.options;
      if (maxReceiveCount !== undefined && deadLetter && stored.receiveCount >= maxReceiveCount) {
        this.messages.delete(stored.messageId);
        await deadLetter.send(stored.body);
        continue;
      }
      stored.receiveCount += 1;
      stored.visibleAt = now + this.options.visibilityTimeoutSeconds * 1000;
      stored.receipt = `${stored.messageId}#${randomUUID()}`;
      out.push({
        messageId: stored.messageId,
        body: stored.body,
        receiptHandle: stored.receipt,
        receiveCount: stored.receiveCount,
      });
    }
    return out;
  }

  async delete(receiptHandle: string): Promise<void> {
    const stored = this.byReceipt(receiptHandle);
    if (stored) this.messages.delete(stored.messageId);
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    const stored = this.byReceipt(receiptHandle);
    if (!stored) throw new Error('ReceiptHandleIsInvalid: the message is not in flight with this receipt');
    stored.visibleAt = this.now() + seconds * 1000;
  }

  /** Messages in the queue, visible or not (SQS `ApproximateNumberOfMessages` + `NotVisible`). */
  get size(): number {
    return this.messages.size;
  }

  /** Every message's body, visible or not: local inspection (tests, `npm start`), which SQS has no call for. */
  bodies(): string[] {
    return [...this.messages.values()].map((stored) => stored.body);
  }

  private byReceipt(receiptHandle: string): Stored | undefined {
    const messageId = receiptHandle.split('#')[0] ?? '';
    const stored = this.messages.get(messageId);
    return stored && stored.receipt === receiptHandle ? stored : undefined;
  }
}
