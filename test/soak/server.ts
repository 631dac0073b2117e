/**
 * The handler process of the soak run: the local stack as `npm start` runs it
 * (DynamoDB Local in its own JVM, the real handlers behind the HTTP adapter),
 * started with `--expose-gc`, driven over IPC by test/soak/soak.ts:
 * `heap` forces two full collections and reports what is still in use, `stop`
 * stops the stack and exits. Also creates the webhook endpoints the load deletes.
 */
import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { startLocalStack } from '#scripts/local/stack.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { staticKeyring } from '#shared/domain/keyring.ts';
import { DEPLOYED_ADDRESS_POLICY } from '#shared/webhooks/address-policy.ts';

const ENDPOINTS = Number(process.env.SOAK_ENDPOINTS ?? 300);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !process.send) throw new Error('run with --expose-gc and an IPC channel (test/soak/soak.ts does)');
const send = (message: unknown) => process.send?.(message);

const stack = await startLocalStack({ port: 0, host: '127.0.0.1', quiet: true });
const doc = createDocumentClient({ endpoint: stack.demo.dynamodb_endpoint });
const admin = {
  table: { doc, name: stack.demo.table_name },
  now: () => new Date(),
  webhooks: { keyring: staticKeyring(stack.keySet), addresses: DEPLOYED_ADDRESS_POLICY },
};
const endpoints: string[] = [];
for (let i = 0; i < ENDPOINTS; i += 20) {
  const batch = await Promise.all(
    Array.from({ length: Math.min(20, ENDPOINTS - i) }, (_, j) =>
      createWebhookEndpoint(admin, {
        organizationId: stack.demo.organization_id,
        url: `https://hooks.example/soak/${i + j}`,
      }),
    ),
  );
  endpoints.push(...batch.map(({ endpoint }) => endpoint.id));
}
doc.destroy();

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  process.exit(0);
}

process.on('message', (message: { type: string }) => {
  if (message.type === 'heap') {
    gc();
    gc();
    const { heapUsed, rss } = process.memoryUsage();
    send({ type: 'heap', heapUsed, rss });
  } else if (message.type === 'stop') {
    void stop();
  }
});
process.on('disconnect', () => void stop());
send({ type: 'ready', demo: stack.demo, endpoints });
