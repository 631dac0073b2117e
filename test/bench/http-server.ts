/**
 * The local stack (`startLocalStack`, as `npm start` runs it) in its own process for the HTTP
 * benchmark: prints one JSON line with the base URL and the demo data, stops when stdin closes.
 *
 * `BENCH_LOCAL_PATH=before` runs it as it ran before section 5 was worked on (issue 24), so one bench
 * run measures both: each function's DynamoDB calls through its port of the IAM proxy (an HTTP hop),
 * the functions' JSON lines written to stdout, and the demo's webhook endpoints at names that never
 * resolve (their deliveries fail and retry in the background), DynamoDB Local with C1 only. `after`
 * (default): IAM judged in process, lines rendered by the quiet terminal (errors only), the demo
 * endpoints at the loopback receiver, DynamoDB Local with both JIT tiers (`steady-state`).
 */
import { startLocalStack } from '#scripts/local/stack.ts';
import { openTerminal } from '#scripts/local/terminal.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const before = process.env.BENCH_LOCAL_PATH === 'before';
if (!before) openTerminal({ format: 'pretty', quiet: true });
const stack = await startLocalStack({
  port: 0,
  host: '127.0.0.1',
  quiet: true,
  iamPath: before ? 'proxy' : 'in-process',
  // As npm start runs it now: deliveries may reach loopback, where the demo endpoints' receiver is.
  allowLoopbackWebhooks: !before,
  demoReceiver: !before,
  // After: DynamoDB Local with both JIT tiers, as npm start runs it; before: C1 only, as it ran then.
  dynamodbJit: before ? 'fast-start' : 'steady-state',
});
process.stdout.write(`${JSON.stringify({ demo: stack.demo })}\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  process.exit(0);
};
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();
