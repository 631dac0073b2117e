/**
 * The delivery queue, as the webhook pipeline uses it: SQS's semantics, behind one interface, so the
 * deliverer runs the same code on AWS (Amazon SQS) and under `npm start` (an in-process queue).
 *
 * - A received message is invisible for the queue's visibility timeout, then comes back with its
 *   receive count one higher, unless it is deleted first.
 * - `changeVisibility` sets when it comes back, counted from now (the retry ladder's backoff).
 * - A message received more than `maxReceiveCount` times goes to the dead-letter queue instead.
 * - `delaySeconds` on send keeps a new message invisible that long.
 */
export interface QueueMessage {
  messageId: string;
  body: string;
  receiptHandle: string;
  /** How many times it was received, this time included (SQS `ApproximateReceiveCount`). */
  receiveCount: number;
}

export interface DeliveryQueue {
  send(body: string, options?: { delaySeconds?: number }): Promise<void>;
  /** Several messages, as few calls as the service allows (SQS: ten per SendMessageBatch). */
  sendBatch(bodies: readonly string[]): Promise<void>;
  receive(options?: { max?: number; waitSeconds?: number }): Promise<QueueMessage[]>;
  delete(receiptHandle: string): Promise<void>;
  changeVisibility(receiptHandle: string, seconds: number): Promise<void>;
}

/** SQS's limits on the values the pipeline passes. */
export const MAX_VISIBILITY_SECONDS = 43_200;
export const MAX_DELAY_SECONDS = 900;
/** Messages per SendMessageBatch. */
export const MAX_BATCH_MESSAGES = 10;
