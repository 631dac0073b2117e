/**
 * The delivery queue, as the webhook pipeline uses it: SQS's semantics, behind one interface, so the
 * deliverer runs the same code on AWS (Amazon SQS) and under `npm start` (an in-process queue).
 *
 * - A received message is invisible for the queue's visibility timeout, then comes back with its
 *   receive count one higher, unless it is deleted first.
 * - `changeVisibility` sets when it comes back, counted from now (the retry ladder's backoff).
 * - A message received more than `maxReceiveCount` times goes to the dead-letter queue instead.
 * - `delaySeconds` on send keeps a new message invisible that long.
 * - A message may name its tenant (`groupId`, SQS's `MessageGroupId` on a standard queue: a *fair
 *   queue*): when one tenant holds many messages in flight (a backlog, a slow receiver), the queue
 *   hands out the other tenants' messages first, so they do not wait behind it. Order is not kept.
 */
export interface QueueMessage {
  messageId: string;
  body: string;
  receiptHandle: string;
  /** How many times it was received, this time included (SQS `ApproximateReceiveCount`). */
  receiveCount: number;
}

/** A message to send: its body, and the tenant it belongs to (fair queue). */
export interface OutgoingMessage {
  body: string;
  groupId?: string;
}

export interface DeliveryQueue {
  send(body: string, options?: { delaySeconds?: number; groupId?: string }): Promise<void>;
  /** Several messages, as few calls as the service allows (SQS: ten per SendMessageBatch). */
  sendBatch(messages: readonly (string | OutgoingMessage)[]): Promise<void>;
  receive(options?: { max?: number; waitSeconds?: number }): Promise<QueueMessage[]>;
  delete(receiptHandle: string): Promise<void>;
  changeVisibility(receiptHandle: string, seconds: number): Promise<void>;
}

/** SQS's limits on the values the pipeline passes. */
export const MAX_VISIBILITY_SECONDS = 43_200;
export const MAX_DELAY_SECONDS = 900;
/** Messages per SendMessageBatch. */
export const MAX_BATCH_MESSAGES = 10;

/** A message to send, whichever way it was given. */
export const outgoing = (message: string | OutgoingMessage): OutgoingMessage =>
  typeof message === 'string' ? { body: message } : message;
