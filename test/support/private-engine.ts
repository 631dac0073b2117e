/**
 * Used first (for its hooks) by a test file that reads a table's stream: the webhook pipeline's
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

/**
 * Called at the top of the file, before its own hooks: its `beforeAll` runs first and (hooks after a
 * suite run in reverse) its `afterAll` last, once the file has dropped its tables. A call rather than
 * an import's side effect, so that every file registers its own hooks even when files share a worker's
 * module cache; the endpoint the file found is put back for the next file.
 */
export function usePrivateEngine(): void {
  let stop: (() => Promise<void>) | undefined;
  let previous: string | undefined;
  beforeAll(async () => {
    const db = await startDynamoDbLocal();
    stop = () => db.stop();
    previous = process.env.AWS_ENDPOINT_URL_DYNAMODB;
    process.env.AWS_ENDPOINT_URL_DYNAMODB = db.endpoint;
  }, 180_000);
  afterAll(async () => {
    if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_DYNAMODB;
    else process.env.AWS_ENDPOINT_URL_DYNAMODB = previous;
    await stop?.();
  });
}
