import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DeliveryQueue, QueueMessage } from './queue.ts';

/** Amazon SQS (or any service speaking its API): the deployed delivery queue. */
export function sqsQueue(client: SQSClient, queueUrl: string): DeliveryQueue {
  return {
    async send(body, options = {}) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          ...(options.delaySeconds ? { DelaySeconds: options.delaySeconds } : {}),
        }),
      );
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
