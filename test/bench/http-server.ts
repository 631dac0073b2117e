/**
 * The local stack (`startLocalStack`, as `npm start` runs it) in its own process for the HTTP
 * benchmark: prints one JSON line with the base URL and the demo data, stops when stdin closes.
 */
import { startLocalStack } from '#scripts/local/stack.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const stack = await startLocalStack({ port: 0, host: '127.0.0.1', quiet: true });
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
