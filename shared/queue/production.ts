/**
 * The deployed delivery queue (Amazon SQS), for the functions that send to it or receive from it:
 * its URL comes from the stack (`DELIVERY_QUEUE_URL`). A module of its own, so that a function that
 * only sends (Redeliver) bundles the SQS client and nothing of the webhook key set.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { requireEnv } from '../runtime.ts';
import type { DeliveryQueue } from './queue.ts';
import { sqsQueue } from './sqs.ts';

/** The delivery queue's URL, given by the stack to every function that sends to it or receives from it. */
export const DELIVERY_QUEUE_URL_ENV = 'DELIVERY_QUEUE_URL';

export function productionQueue(): DeliveryQueue {
  return sqsQueue(new SQSClient({}), requireEnv(DELIVERY_QUEUE_URL_ENV));
}
