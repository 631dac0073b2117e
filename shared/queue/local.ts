import { randomUUID } from 'node:crypto';
import { type DeliveryQueue, type OutgoingMessage, outgoing, type QueueMessage } from './queue.ts';

interface Stored {
  messageId: string;
  body: string;
  /** Its tenant (fair queue); none: a group of its own. */
  groupId: string | undefined;
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

  async send(body: string, options: { delaySeconds?: number; groupId?: string } = {}): Promise<void> {
    const messageId = randomUUID();
    this.messages.set(messageId, {
      messageId,
      body,
      groupId: options.groupId,
      receiveCount: 0,
      visibleAt: this.now() + (options.delaySeconds ?? 0) * 1000,
      receipt: undefined,
    });
  }

  async sendBatch(messages: readonly (string | OutgoingMessage)[]): Promise<void> {
    for (const { body, groupId } of messages.map(outgoing)) {
      await this.send(body, groupId ? { groupId } : {});
    }
  }

  /**
   * Up to `max` visible messages, as a fair queue hands them out: each next one from the tenant
   * with the fewest messages in flight (received, not deleted, not yet visible again: a backlog
   * waiting on its retries or a slow receiver), oldest first within a tenant and between equals.
   */
  async receive(options: { max?: number } = {}): Promise<QueueMessage[]> {
    const max = options.max ?? 10;
    const out: QueueMessage[] = [];
    const now = this.now();
    const group = (stored: Stored) => stored.groupId ?? `#${stored.messageId}`;
    const inFlight = new Map<string, number>();
    const visible: Stored[] = [];
    for (const stored of this.messages.values()) {
      if (stored.visibleAt > now) {
        if (stored.receipt !== undefined) inFlight.set(group(stored), (inFlight.get(group(stored)) ?? 0) + 1);
      } else {
        visible.push(stored);
      }
    }
    const fairest = (): Stored | undefined => {
      let best: Stored | undefined;
      for (const stored of visible) {
        if (!best || (inFlight.get(group(stored)) ?? 0) < (inFlight.get(group(best)) ?? 0)) best = stored;
      }
      if (best) visible.splice(visible.indexOf(best), 1);
      return best;
    };
    for (let stored = fairest(); stored; stored = fairest()) {
      if (out.length >= max) break;
      const { maxReceiveCount, deadLetter } = this.options;
      if (maxReceiveCount !== undefined && deadLetter && stored.receiveCount >= maxReceiveCount) {
        this.messages.delete(stored.messageId);
        await deadLetter.send(stored.body);
        continue;
      }
      stored.receiveCount += 1;
      stored.visibleAt = now + this.options.visibilityTimeoutSeconds * 1000;
      stored.receipt = `${stored.messageId}#${randomUUID()}`;
      inFlight.set(group(stored), (inFlight.get(group(stored)) ?? 0) + 1);
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
