/**
 * Imported first (for its hooks) by a test file that reads a table's stream: the webhook pipeline's
 * poller, the table-state reader. The file then runs on a DynamoDB Local of its own instead of its
 * project's shared one.
 *
 * Why: with two files at once on one engine, each reading its own table's stream, deliveries stopped
 * arriving (hygiene's and webhook-faults' waits for a delivery timed out in a two-worker run; alone,
 * and one file at a time, they pass), as they did when the e2e stacks and the integration suites
 * shared one engine. DynamoDB Local's streams are not reliable across concurrent streamed tables;
 * an engine per streaming file costs one JVM start (about 2 s of one core).
 */
import { afterAll, beforeAll } from 'vitest';
import { startDynamoDbLocal } from '#scripts/local/dynamodb-local.ts';

let stop: (() => Promise<void>) | undefined;

// Registered before the file's own hooks: it runs first, and (hooks after a suite run in reverse)
// its afterAll last, once the file has dropped its tables.
beforeAll(async () => {
  const db = await startDynamoDbLocal();
  stop = () => db.stop();
  process.env.AWS_ENDPOINT_URL_DYNAMODB = db.endpoint;
}, 180_000);

afterAll(async () => {
  await stop?.();
});
