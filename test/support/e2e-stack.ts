/**
 * Global setup of the e2e project, after test/support/dynamodb.ts: one local API as `npm start`
 * serves it (server, handlers, IAM proxy, webhook pipeline, seed), on the project's DynamoDB Local,
 * shared by the files that take it with `sharedLocalApi()` (test/support/local-api.ts) instead of
 * each starting and seeding a stack of its own.
 */
import type { TestProject } from 'vitest/node';
import { setLineSink } from '#shared/observability/telemetry.ts';
import { setupPolicies } from './dynamodb.ts';
import { startLocalApi } from './local-api.ts';

export default async function setup({ provide }: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  // The stack runs in vitest's own process, where the projects' onConsoleLog filter does not reach:
  // its line per request and per pipeline step are dropped here, its warnings and errors shown.
  setLineSink((line) => {
    if (line.level !== 'info') console.error(JSON.stringify(line));
  });
  const stack = await startLocalApi('e2e-shared', { policies: setupPolicies() });
  provide('sharedLocalApi', { demo: stack.demo, keySet: stack.keySet });
  return async () => {
    await stack.stop();
    setLineSink(undefined);
  };
}
