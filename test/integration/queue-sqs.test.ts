/**
 * The delivery queue's scenarios (test/support/queue-scenarios.ts) against Amazon SQS's API: moto's
 * server, preinstalled on our machines, in real time (`npm run test:sqs`). The same list runs against
 * the in-process queue in the fast tier (queue.test.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll } from 'vitest';
import { type Moto, startMoto } from '#scripts/deploy/moto.ts';
import { sqsQueue } from '#shared/queue/sqs.ts';
import { MAX_RECEIVES, type Pair, queueScenarios, VISIBILITY } from '../support/queue-scenarios.ts';

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

queueScenarios({
  name: 'Amazon SQS API (moto)',
  makePair: sqsPair,
  // SQS's timers are its own: the only way to let its time pass is to wait.
  pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
});
