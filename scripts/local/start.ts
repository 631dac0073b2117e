/**
 * `npm start`: the API on http://127.0.0.1:3000 over Amazon DynamoDB Local,
 * with demo data. Options: `--data-dir DIR` keeps data across restarts; `PORT`
 * overrides the port.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startLocalStack } from './stack.ts';
import { logFormatFromEnv, openTerminal } from './terminal.ts';

// The functions run on Node 22 on AWS, and Node 20 runs everything here: the SDK's notice about a
// future Node 22 requirement is nothing a newcomer starting the demo can act on.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: { 'data-dir': { type: 'string' }, quiet: { type: 'boolean', default: false } },
});
const port = Number(process.env.PORT ?? 3000);
if (!Number.isInteger(port) || port < 0 || port > 65_535)
  throw new Error(`PORT must be a port number, got ${process.env.PORT}`);

// One short line per request and per webhook attempt; LOG_FORMAT=json: the functions' CloudWatch lines.
const terminal = openTerminal({ format: logFormatFromEnv(), quiet: values.quiet ?? false });
const stack = await startLocalStack({
  port,
  ...(terminal.logRequest ? { logRequest: terminal.logRequest } : {}),
  // A developer receives deliveries on this machine: http://127.0.0.1:<port>/… is a valid endpoint URL.
  allowLoopbackWebhooks: true,
  // A session of minutes to hours: both JIT tiers (docs/performance.md, section 5).
  dynamodbJit: 'steady-state',
  quiet: values.quiet ?? false,
  ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
});
const { demo } = stack;
mkdirSync('.local', { recursive: true });
writeFileSync('.local/demo.json', `${JSON.stringify(demo, null, 2)}\n`);
writeFileSync('.local/webhook-keys.json', stack.keySet, { mode: 0o600 });

const base = demo.base_url;
console.log(`
  Commerce API (local) ${stack.reusedData ? '— kept data reused' : '— fresh demo data'}
  ─────────────────────────────────────────────────────────────
  Base URL                 ${base}
  DynamoDB Local           ${demo.dynamodb_endpoint} (table ${demo.table_name})
  IAM                      each function's calls judged by its policy in the synthesised template
  Organization             ${demo.organization_id}
  Personal access token    ${demo.personal_access_token}
  Customer session token   ${demo.customer_session_token}   (customer ${demo.customer_id}, 1 hour)
  Free product             ${demo.free_product_id}
  Webhook endpoints        ${demo.webhook_endpoint_ids.join(', ')}
                           → the demo receiver ${demo.webhook_receiver_url ?? '(none)'}/demo/1…3, which verifies each delivery
  Subscription clock       every ${Number(process.env.SCHEDULE_INTERVAL_MS ?? 60_000) / 1000} s (SCHEDULE_INTERVAL_MS; 0: off)
  Webhooks                 delivered for real (table stream → relay → in-process queue → deliverer)
  Everything else          .local/demo.json

  Watch deliveries: in another terminal, \`npm run webhooks:listen\` registers an endpoint of the demo
  organization at http://127.0.0.1:8788/webhooks (every event type), then verifies and prints each
  delivery; \`-- --status 500\` answers 500 to watch the retries. Create a customer or a subscription:

  curl -s -X POST ${base}/v1/customers/ -H "Authorization: Bearer ${demo.personal_access_token}" -H 'Content-Type: application/json' -d '{"email":"new@example.com"}'

  Try:
  curl -s -X POST ${base}/v1/subscriptions/ -H "Authorization: Bearer ${demo.personal_access_token}" -H 'Content-Type: application/json' -d '{"product_id":"${demo.free_product_id}","customer_id":"${demo.customer_id}","metadata":{"source":"curl"}}'
  curl -s "${base}/v1/customer-portal/wallets/?sorting=-balance&sorting=created_at&limit=5" -H "Authorization: Bearer ${demo.customer_session_token}"
  curl -s -i -X DELETE ${base}/v1/webhooks/endpoints/${demo.webhook_endpoint_ids[0]} -H "Authorization: Bearer ${demo.personal_access_token}"
  curl -s -X POST ${base}/v1/webhooks/endpoints -H "Authorization: Bearer ${demo.personal_access_token}" -H 'Content-Type: application/json' -d '{"url":"http://127.0.0.1:4000/hooks","format":"raw","events":["subscription.created"]}'
  curl -s -X POST ${base}/v1/customer-sessions/ -H "Authorization: Bearer ${demo.personal_access_token}" -H 'Content-Type: application/json' -d '{"external_customer_id":"${demo.customer_external_id}"}'

  Each request prints one line (time, method, path, status, ms, function), each webhook attempt one
  (LOG_FORMAT=json: the JSON/EMF lines the deployed functions write for CloudWatch instead).
  Ctrl-C stops the API and the database.
`);

let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping the API and DynamoDB Local…`);
  await stack.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
