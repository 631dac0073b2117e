import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import DurationSequencer from './test/support/sequencer.ts';

/**
 * Two tiers (docs/testing.md).
 *
 * The fast tier is `npm test`: the projects unit (no I/O), integration (DynamoDB Local), e2e (the
 * local HTTP API) and infra (the synthesised templates), minus the long suites' files.
 *
 * Each long suite is a project of its own, run by `npm run test:<name>`; `npm run test:all` runs
 * every project. A long suite's file is listed here once: the fast projects exclude exactly these.
 */
export const longSuites = {
  /** Property-based fuzzing at full length, in process and over HTTP. */
  fuzz: { needs: 'dynamodb', files: ['test/integration/fuzz-full.test.ts', 'test/e2e/fuzz-http.test.ts'] },
  /** Every grant element removed in turn, every scenario run again under the mutated policy. */
  'iam-mutations': { needs: 'dynamodb', files: ['test/integration/iam-mutations.test.ts'] },
  /** Every kind of DynamoDB fault at every call of every operation, with the SDK's real back-off. */
  faults: { needs: 'dynamodb', files: ['test/integration/faults-matrix.test.ts'] },
  /** Every bundled function run on the Lambda runtime's Node (`npm run lambda-node` first). */
  bundles: { needs: 'synth', files: ['test/infra/bundles.test.ts'] },
  /** Headless Chromium: CORS from a page, the rendered API reference. */
  browser: { needs: 'dynamodb', files: ['test/e2e/cors.test.ts', 'test/e2e/api-reference.test.ts'] },
  /** `npm start` as a process, stopped with Ctrl-C, as a newcomer runs it. */
  process: { needs: 'none', files: ['test/e2e/npm-start.test.ts'] },
  /** One tenant's receiver that never answers, another tenant's deliveries: in real time. */
  fairness: { needs: 'dynamodb', files: ['test/integration/webhook-fairness.test.ts'] },
  /** The delivery queue's scenarios against Amazon SQS's API (moto), in real time. */
  sqs: { needs: 'none', files: ['test/integration/queue-sqs.test.ts'] },
  /** Issue 25's scale checks: 500 concurrent signups on one product, transaction conflicts emulated. */
  scale: {
    needs: 'dynamodb',
    files: [
      'test/scale/concurrent-subscriptions.test.ts',
      'test/scale/customer-ceiling.test.ts',
      'test/scale/product-ceiling.test.ts',
      'test/scale/subscription-ceiling.test.ts',
    ],
  },
  /** Issue 28's exactness property at 100,000 events (the fast tier runs it with 2,000). */
  exactness: { needs: 'dynamodb', files: ['test/integration/meter-exactness-full.test.ts'] },
} as const satisfies Record<string, { needs: 'dynamodb' | 'synth' | 'none'; files: readonly string[] }>;

const longFiles = Object.values(longSuites).flatMap((suite) => suite.files);

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
  // aws-cdk-lib's built-in CloudFormation validation (a WebAssembly rule engine) on every synth: about
  // 7 s of a core to load, then 1-3 s per template, in each process that synthesises. Without
  // `@aws-cdk/core:validateAgainstDefaultRules` it only downgrades what it finds to warnings, so no test
  // can fail on it; the templates and asset manifests are the same byte for byte without it. The
  // templates are linted by `npm run lint:cfn` (cfn-lint), and `npm run synth` still runs it.
  // cdk-nag (registered by infra/app.ts, run by the shared synth) is a plugin of its own and still runs.
  CDK_VALIDATION: process.env.CDK_VALIDATION ?? 'false',
};
// The global setups (DynamoDB Local, the demo seed) run in this process, not a worker: the same notice off.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??=
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;
// The same for the synths of this process (the policies) and its children (the infra files' shared
// synth, test/support/synth.ts), which inherit its environment.
process.env.CDK_VALIDATION ??= env.CDK_VALIDATION;

/** One DynamoDB Local per project that asks for one; one policy synthesis and one demo seed per run. */
const dynamodb = {
  globalSetup: ['test/support/dynamodb.ts'],
  setupFiles: ['test/support/dynamodb-env.ts'],
  // A deadline for a hung test, not a wait: on a loaded 2-core machine a test of a few hundred
  // requests (every page of every filter) has taken 30 s.
  testTimeout: 120_000,
  hookTimeout: 180_000,
};
/**
 * One synth per stage per run (prod bundled, a preview stage) shared by the infra files, and a guard
 * that fails a file synthesising one of them again or bundling (test/support/synth.ts).
 */
const synth = {
  globalSetup: ['test/support/synth.ts'],
  setupFiles: ['test/support/synth-guard.ts'],
  testTimeout: 120_000,
  hookTimeout: 300_000,
};
const none = { testTimeout: 120_000, hookTimeout: 180_000 };
const setups = { dynamodb, synth, none } as const;

const fast = (name: string, include: string, setup: object): TestProjectInlineConfiguration => ({
  extends: true,
  test: { name, include: [include], exclude: longFiles, ...setup },
});

export default defineConfig({
  test: {
    env,
    // Two workers on the 2-core machines we run on (vitest's default leaves one core to itself): most
    // files wait on DynamoDB Local's JVM or an HTTP round trip, and a second file fills that time.
    maxWorkers: 2,
    // Longest files first, integration before infra (which waits for the shared synth): the run's
    // tail and idle workers (test/support/sequencer.ts).
    sequence: { sequencer: DurationSequencer },
    // Every request writes one JSON line (shared/observability/telemetry.ts), and so does every step
    // of the webhook pipeline (the e2e suites' demo endpoints retry all along); tests that read the
    // lines spy on the console, and the run's output stays readable without them. Warnings and errors
    // still show.
    onConsoleLog: (log) =>
      !/^\{"(?:level":"info","message":"(?:request|webhook [a-z ]+|subscription clock)|_aws)"/.test(log),
    projects: [
      // Unit tests do no I/O, but some compile every schema: a loaded machine needs more than 5 s.
      fast('unit', 'test/unit/**/*.test.ts', { testTimeout: 30_000 }),
      // Integration is not isolated: a worker's files share its module cache rather than importing
      // the handlers and the SDK again per file (loaded machine: 505 -> 350 CPU-s, docs/testing.md).
      // A file's setup must therefore be a call that registers its own hooks, never an import's side
      // effect (test/support/private-engine.ts). Unit stays isolated: two of its files (clock-metrics,
      // local-terminal) failed after others in a full run, through console state they share.
      fast('integration', 'test/integration/**/*.test.ts', { ...dynamodb, isolate: false }),
      // One local API shared by the e2e files that take it (test/support/e2e-stack.ts).
      fast('e2e', 'test/e2e/**/*.test.ts', {
        ...dynamodb,
        globalSetup: [...dynamodb.globalSetup, 'test/support/e2e-stack.ts'],
      }),
      fast('infra', 'test/infra/**/*.test.ts', synth),
      ...Object.entries(longSuites).map(
        ([name, suite]): TestProjectInlineConfiguration => ({
          extends: true,
          test: { name, include: [...suite.files], ...setups[suite.needs] },
        }),
      ),
    ],
  },
});
