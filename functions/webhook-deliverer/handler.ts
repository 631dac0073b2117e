import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { productionQueue } from '#shared/queue/production.ts';
import { CircuitBreaker } from '#shared/webhooks/circuit.ts';
import { type DelivererDependencies, deliverBatch } from '#shared/webhooks/deliver.ts';
import { webhookKeyDependencies } from '#shared/webhooks/runtime.ts';

/**
 * SQS → one attempt per message; retries are reported as batch item failures (ReportBatchItemFailures).
 * The endpoints' circuits live as long as the handler (a container), unless given.
 */
export const createHandler = (given: DelivererDependencies) => {
  const deps: DelivererDependencies = { ...given, circuit: given.circuit ?? new CircuitBreaker() };
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const messages = event.Records.map((r) => ({
      messageId: r.messageId,
      body: r.body,
      receiptHandle: r.receiptHandle,
      receiveCount: Number(r.attributes.ApproximateReceiveCount),
    }));
    const failed = await deliverBatch(deps, messages);
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
};

// The endpoint API's key set (Secrets Manager, read on the first delivery) opens the signing secrets;
// deliveries go to public addresses only, as deployed.
export const handler = createHandler({ ...webhookKeyDependencies(), queue: productionQueue() });
