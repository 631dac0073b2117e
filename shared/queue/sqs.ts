import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { type DeliveryQueue, MAX_BATCH_MESSAGES, outgoing, type QueueMessage } from './queue.ts';

/** Entries a batch refused (SQS answers per entry) are sent again this many times, then it fails. */
const BATCH_ATTEMPTS = 3;

/** Amazon SQS (or any service speaking its API): the deployed delivery queue. */
export function sqsQueue(client: SQSClient, queueUrl: string): DeliveryQueue {
  return {
    async send(body, options = {}) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          ...(options.delaySeconds ? { DelaySeconds: options.delaySeconds } : {}),
          ...(options.groupId ? { MessageGroupId: options.groupId } : {}),
        }),
      );
    },
    async sendBatch(messages) {
      for (let offset = 0; offset < messages.length; offset += MAX_BATCH_MESSAGES) {
        let entries = messages
          .slice(offset, offset + MAX_BATCH_MESSAGES)
          .map(outgoing)
          .map(({ body, groupId }, i) => ({
            Id: String(i),
            MessageBody: body,
            ...(groupId ? { MessageGroupId: groupId } : {}),
          }));
        for (let attempt = 1; entries.length > 0; attempt++) {
          const result = await client.send(
            new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
          );
          const failed = new Set((result.Failed ?? []).map((entry) => entry.Id));
          entries = entries.filter((entry) => failed.has(entry.Id));
          if (entries.length > 0 && attempt >= BATCH_ATTEMPTS) {
            throw new Error(`SendMessageBatch refused ${entries.length} messages ${attempt} times`);
          }
        }
      }
    },
    async receive(options = {}) {
      const result = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: options.max ?? 10,
          WaitTimeSeconds: options.waitSeconds ?? 0,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      return (result.Messages ?? []).map(
        (message): QueueMessage => ({
          messageId: message.MessageId ?? '',
          body: message.Body ?? '',
          receiptHandle: message.ReceiptHandle ?? '',
          receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? 1),
        }),
      );
    },
    async delete(receiptHandle) {
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: receiptHandle }));
    },
    async changeVisibility(receiptHandle, seconds) {
      await client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: seconds,
        }),
      );
    },
  };
}
