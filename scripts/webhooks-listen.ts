/**
 * `npm run webhooks:listen`: a webhook receiver on loopback for the running `npm start`. It registers
 * an endpoint of the demo organization pointing at itself (subscribed to every event type, with a fresh
 * `whsec_` secret), verifies each delivery with that secret (the stock Standard Webhooks library and
 * `@polar-sh/sdk`'s `validateEvent`) and prints it. Ctrl-C deletes the endpoint and stops.
 * Options: `--port 8788`, `--events customer.created,subscription.created`, `--status 500` (answer
 * every delivery with that status, to watch the retries).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { webhooks } from '@polar-sh/sdk/2026-10';
import { Webhook } from 'standardwebhooks';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { getWebhookEndpoint, softDeleteWebhookEndpoint } from '#shared/data/webhooks.ts';
import { staticKeyring } from '#shared/domain/keyring.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { openWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import { WEBHOOK_EVENT_TYPES } from '#shared/webhooks/events.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'local';
process.env.AWS_SECRET_ACCESS_KEY ??= 'local';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8788' },
    events: { type: 'string', default: WEBHOOK_EVENT_TYPES.join(',') },
    status: { type: 'string', default: '204' },
  },
});
const demo = JSON.parse(readFileSync('.local/demo.json', 'utf8')) as {
  organization_id: string;
  dynamodb_endpoint: string;
  table_name: string;
};
// The running npm start's key set and its loopback rule: the endpoint is created as the API creates one.
const deps: Dependencies = {
  table: { doc: createDocumentClient({ endpoint: demo.dynamodb_endpoint }), name: demo.table_name },
  now: () => new Date(),
  webhooks: {
    keyring: staticKeyring(readFileSync('.local/webhook-keys.json', 'utf8')),
    addresses: { allowLoopback: true },
  },
};
const status = Number(values.status);

// Filled once the endpoint exists (before it can receive anything).
let secret = '';
const seen = new Set<string>();
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', async () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const id = headers['webhook-id'] ?? '?';
    try {
      new Webhook(secret).verify(body, headers);
      await webhooks.validateEvent(body, headers, secret);
      const event = JSON.parse(body) as { type: string; timestamp: string; data: { id?: string } };
      const again = seen.has(id) ? ' (again: same webhook-id, a receiver dedupes it)' : '';
      seen.add(id);
      console.log(
        `${new Date().toISOString()}  ${event.type.padEnd(24)} ${event.data.id ?? ''}  webhook-id ${id}  verified${again}  → ${status}`,
      );
      res.writeHead(status).end();
    } catch (error) {
      console.log(`${new Date().toISOString()}  REFUSED webhook-id ${id}: ${(error as Error).message}`);
      res.writeHead(400).end();
    }
  });
});
await new Promise<void>((resolve) => server.listen(Number(values.port), '127.0.0.1', resolve));
const url = `http://127.0.0.1:${values.port}/webhooks`;

const opened = await openWebhookEndpoint(deps, demo.organization_id, {
  url,
  name: 'webhooks:listen',
  format: 'raw',
  events: values.events.split(',').map((type) => type.trim()),
});
const { endpoint } = opened;
secret = opened.secret;
console.log(`Listening on ${url} as webhook endpoint ${endpoint.id} of organization ${demo.organization_id}
Events: ${endpoint.events.join(', ')}
Secret: ${secret}
Create a subscription or a customer (see npm start's banner); Ctrl-C deletes the endpoint and stops.`);

const stop = async () => {
  // As it is now (the deliverer may have changed its failure count since).
  const current = await getWebhookEndpoint(deps.table, endpoint.id);
  if (current && current.deleted_at === null) {
    await softDeleteWebhookEndpoint(deps.table, current, new Date().toISOString());
  }
  server.close();
  deps.table.doc.destroy();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
