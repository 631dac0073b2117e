/**
 * `npm start` runs the subscription clock on a timer, as the stack's schedule runs it on AWS: the
 * same handler, under its own function's policy. A subscription whose period ended before the API
 * started is renewed within a tick, as the API then answers it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalStack } from '#scripts/local/stack.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { DEPLOYED_WEBHOOK_SETTINGS } from '#shared/runtime.ts';
import { createSubscription } from '#shared/services/create-subscription.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynamodb.ts';
import { startLocalApi } from '../support/local-api.ts';
import { waitFor } from '../support/wait.ts';

let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalApi('clock', { scheduleIntervalMs: 200 });
});
afterAll(() => stack?.stop());

it('renews a subscription whose period has ended, within a tick of the timer', async () => {
  const { demo } = stack;
  const doc = createDocumentClient({
    endpoint: demo.dynamodb_endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const longAgo = new Date(Date.now() - 40 * 86_400_000);
  // Written as Create Subscription writes it, 40 days ago: its first month is over.
  const subscription = await createSubscription(
    { table: { doc, name: demo.table_name }, now: () => longAgo, webhooks: DEPLOYED_WEBHOOK_SETTINGS },
    {
      kind: 'user',
      userId: 'operator',
      tokenId: 'operator',
      organizationIds: [demo.organization_id],
      scopes: new Set(['subscriptions:write']),
    },
    { product_id: demo.free_product_id, customer_id: demo.customer_id },
  );
  doc.destroy();
  expect(Date.parse(String(subscription.current_period_end))).toBeLessThan(Date.now());
  let current = subscription;
  await waitFor(
    async () => {
      const reply = await fetch(`${demo.base_url}/v1/subscriptions/${subscription.id}`, {
        headers: { authorization: `Bearer ${demo.personal_access_token}` },
      });
      current = (await reply.json()) as typeof subscription;
      return current.current_period_start !== subscription.current_period_start;
    },
    20_000,
    'the clock to renew the subscription',
  );
  expect(current).toMatchObject({
    status: 'active',
    current_period_start: subscription.current_period_end,
  });
  expect(Date.parse(String(current.current_period_end))).toBeGreaterThan(Date.now());
});
