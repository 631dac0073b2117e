import { defineConfig } from 'vitest/config';

/**
 * Test layers, split by what they need (see README "Tests"):
 * unit (no I/O), integration (DynamoDB Local), e2e (the local HTTP API), infra (synthesised template).
 */
const env = {
  // Handler modules wire their production dependencies at import; tests pass their own.
  TABLE_NAME: 'not-used-by-tests',
  WEBHOOK_KEY_SET_ID: 'not-used-by-tests',
  DELIVERY_QUEUE_URL: 'http://not-used-by-tests',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  // The SDK's notice that its 2027 releases need Node 22 (CI runs Node 20; the functions run 22).
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};
// The global setups (DynamoDB Local, the demo seed) run in this process, not a worker: the same notice off.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??=
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;

export default defineConfig({
  test: {
    env,
    // Every request writes one JSON line (shared/observability/telemetry.ts), and so does every step
    // of the webhook pipeline (the e2e suites' demo endpoints retry all along); tests that read the
    // lines spy on the console, and the run's output stays readable without them. Warnings and errors
    // still show.
    onConsoleLog: (log) =>
      !/^\{"(?:level":"info","message":"(?:request|webhook [a-z ]+|subscription clock)|_aws)"/.test(log),
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/dynamodb.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/dynamodb.ts'],
          testTimeout: 30_000,
          hookTimeout: 180_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
