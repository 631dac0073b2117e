/**
 * The subscription clock cannot be wedged (issue 25, point 5), against DynamoDB Local under the
 * clock's deployed policy: its shards run at once; a subscription whose change fails (its product
 * gone from the table, a fault on its transaction) is counted, logged and skipped past, while the
 * rest of its shard and the other shards renew; it is tried once per run, never in a loop, and
 * renews once what poisoned it is gone.
 *
 * The dates lie before the demo seed's, and what a test creates is revoked after it
 * (test/support/clock-world.ts).
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createProduct } from '#scripts/admin/commands.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { attr, DUE_SHARDS, keys } from '#shared/data/table.ts';
import type { Subscription } from '#shared/generated/api-types.ts';
import { runSubscriptionClock } from '#shared/services/subscription-clock.ts';
import { useClockWorld } from '../support/clock-world.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynamodb.ts';
import { waitFor } from '../support/wait.ts';
import type { World } from '../support/world.ts';

const clock = useClockWorld('clock-failures', '2010-12-31T00:00:00.000Z');
const { subscribeAt, stored } = clock;

const at = (iso: string) => new Date(iso);
const shardOf = (id: string) => Number.parseInt(id.slice(0, 2), 16) % DUE_SHARDS;

async function freeMonthlyProduct(): Promise<string> {
  return (
    await createProduct(clock.world.admin, {
      organizationId: clock.world.demo.organization_id,
      name: `Free monthly ${randomUUID()}`,
      recurringInterval: 'month',
      recurringIntervalCount: 1,
      priceAmount: 0,
      currency: 'usd',
    })
  ).id;
}

/**
 * One subscription to `poisonedProduct` and healthy ones to `healthyProduct` (created on the 1st to
 * 9th of January 2010), until at least one healthy one shares the poisoned one's shard and one lies
 * in another shard.
 */
async function cohort(poisonedProduct: string, healthyProduct: string) {
  const poisoned = await subscribeAt('2010-01-05T00:00:00.000Z', poisonedProduct);
  const healthy: Subscription[] = [];
  const sameShard = () => healthy.filter((s) => shardOf(s.id) === shardOf(poisoned.id)).length;
  const otherShards = () =>
    new Set(healthy.map((s) => shardOf(s.id)).filter((n) => n !== shardOf(poisoned.id)));
  while ((sameShard() < 2 || otherShards().size < 2) && healthy.length < 60) {
    healthy.push(await subscribeAt(`2010-01-0${(healthy.length % 9) + 1}T00:00:00.000Z`, healthyProduct));
  }
  expect(sameShard()).toBeGreaterThanOrEqual(2);
  expect(otherShards().size).toBeGreaterThanOrEqual(2);
  return { poisoned, healthy };
}

/** Three months on from January: each healthy one renews three times (Feb, Mar, Apr), over several passes. */
const RUN_AT = '2010-04-15T00:00:00.000Z';
const clockDeps = (overrides: Partial<ReturnType<World['depsFor']>> = {}) => ({
  ...clock.world.depsFor('subscription-clock'),
  now: () => at(RUN_AT),
  ...overrides,
});

async function expectRenewedToMay(healthy: readonly Subscription[]): Promise<void> {
  for (const subscription of healthy) {
    const item = await stored(subscription.id);
    expect(item.current_period_end).toBe(
      String(subscription.current_period_end).replace('2010-02-', '2010-05-'),
    );
    expect(item[attr.gsi2sk]).toMatch(new RegExp(`#${subscription.id}$`));
  }
}

describe('a poisoned subscription', () => {
  it('whose product is gone is counted and skipped; its shard and the other shards renew; it renews once the product is back', async () => {
    const healthyProduct = await freeMonthlyProduct();
    const goneProduct = await freeMonthlyProduct();
    const { poisoned, healthy } = await cohort(goneProduct, healthyProduct);
    const productKey = keys.product(goneProduct);
    const productItem = (
      await clock.world.table.doc.send(new GetCommand({ TableName: clock.world.table.name, Key: productKey }))
    ).Item;
    await clock.world.table.doc.send(
      new DeleteCommand({ TableName: clock.world.table.name, Key: productKey }),
    );
    try {
      // Small batches: each shard takes several batches and, for the catch-up, several passes.
      const report = await runSubscriptionClock(clockDeps(), { batchSize: 2 });
      expect(report).toMatchObject({
        renewed: healthy.length * 3,
        failures: 1,
        failed: [poisoned.id],
        complete: true,
      });
      await expectRenewedToMay(healthy);
      // Untouched: still due, its due key where it was (the next run tries it again).
      const left = await stored(poisoned.id);
      expect(left.current_period_end).toBe(poisoned.current_period_end);
      // The next run tries it once again and renews nothing else.
      const again = await runSubscriptionClock(clockDeps(), { batchSize: 2 });
      expect(again).toMatchObject({ renewed: 0, ended: 0, failures: 1, failed: [poisoned.id] });
    } finally {
      await clock.world.table.doc.send(
        new PutCommand({ TableName: clock.world.table.name, Item: productItem }),
      );
    }
    // Its product back, the next run renews it, all three periods.
    const healed = await runSubscriptionClock(clockDeps(), { batchSize: 2 });
    expect(healed).toMatchObject({ renewed: 3, failures: 0, failed: [] });
    expect((await stored(poisoned.id)).current_period_end).toBe('2010-05-05T00:00:00.000Z');
  });

  it('whose transaction fails (a throttle) is tried once per run, not in a loop; the others renew', async () => {
    const product = await freeMonthlyProduct();
    const { poisoned, healthy } = await cohort(product, product);
    // The clock's own client (its endpoint of the IAM proxy), failing every transaction on the
    // poisoned subscription as DynamoDB does when it throttles.
    const doc = createDocumentClient({
      endpoint: clock.world.iam.endpointFor('subscription-clock'),
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    let attempts = 0;
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        if (
          (context as { commandName?: string }).commandName === 'TransactWriteItemsCommand' &&
          JSON.stringify(args.input).includes(`SUBSCRIPTION#${poisoned.id}`)
        ) {
          attempts++;
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ThrottlingException',
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'throttle-one' },
    );
    try {
      // Whole shards in one batch: each shard's one page has no cursor, so the catch-up (three
      // periods) takes three passes from the shard's start, each reading the poisoned one again.
      const deps = clockDeps({ table: { doc, name: clock.world.table.name } });
      const report = await runSubscriptionClock(deps);
      expect(report).toMatchObject({ renewed: healthy.length * 3, failures: 1, failed: [poisoned.id] });
      // Read on each pass, but tried once in the run.
      expect(attempts).toBe(1);
      await expectRenewedToMay(healthy);
      expect((await stored(poisoned.id)).current_period_end).toBe(poisoned.current_period_end);
      const again = await runSubscriptionClock(deps);
      expect(again).toMatchObject({ renewed: 0, failures: 1, failed: [poisoned.id] });
      expect(attempts).toBe(2);
    } finally {
      doc.destroy();
    }
    // The throttle over, the next run renews it.
    const healed = await runSubscriptionClock(clockDeps());
    expect(healed).toMatchObject({ renewed: 3, failures: 0 });
  });
});

describe('shards', () => {
  it('run at once: every shard is read before the first shard has its first answer', async () => {
    const doc = createDocumentClient({
      endpoint: clock.world.iam.endpointFor('subscription-clock'),
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    const asked = new Set<string>();
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName === 'QueryCommand') {
          const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
          const shard = String(input.ExpressionAttributeValues?.[':shard']);
          asked.add(shard);
          // Shard 0's first query waits until every shard has asked: run one after another, the
          // other shards never would, and this fails at the deadline.
          if (shard.endsWith('#0')) {
            await waitFor(() => asked.size === DUE_SHARDS, 20_000, 'every shard to query');
          }
        }
        return next(args);
      },
      { step: 'initialize', name: 'hold-shard-0' },
    );
    try {
      const report = await runSubscriptionClock(clockDeps({ table: { doc, name: clock.world.table.name } }));
      expect(report.complete).toBe(true);
      expect(asked.size).toBe(DUE_SHARDS);
    } finally {
      doc.destroy();
    }
  });
});
