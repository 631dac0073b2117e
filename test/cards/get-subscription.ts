import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import type { LocalWorld } from '#test/bench/local-table.ts';
import { freshMeteredSubscription, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

/**
 * A subscription of the demo customer holding a free fixed price and a metered price on a count
 * meter of its own, with 3 events folded by the meter aggregator (the bench's metered case).
 */
export async function benchMeteredSubscription(world: LocalWorld): Promise<string> {
  const name = `bench.${randomUUID()}`;
  const meter = newMeter(
    {
      name: `Bench ${name.slice(6, 14)}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation: { func: 'count' },
    },
    world.demo.organization_id,
    new Date(Date.now() - 60_000),
  );
  await storeNewMeter(world.admin.table, meter);
  const at = new Date().toISOString();
  await aggregateEvents(
    { table: world.admin.table, now: () => new Date() },
    `bench-${randomUUID()}`,
    [1, 2, 3].map((n) => ({
      sequence: String(n),
      event: {
        id: randomUUID(),
        organization_id: world.demo.organization_id,
        name,
        timestamp_us: Date.parse(at) * 1000,
        external_id: null,
        customer_id: world.demo.customer_id,
        external_customer_id: null,
        metadata: '{}',
        ingest_request: randomUUID(),
        ingested_at: at,
      },
    })),
  );
  const token = world.demo.personal_access_token;
  const product = await world.call('create-product', 'POST', '/v1/products/', {
    token,
    body: {
      name: `Bench metered ${randomUUID()}`,
      recurring_interval: 'month',
      prices: [
        { amount_type: 'fixed', price_amount: 0 },
        { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: meter.id },
      ],
    },
  });
  if (product.status !== 201) throw new Error(`bench metered product: ${product.status}`);
  const subscribed = await world.call('create-subscription', 'POST', '/v1/subscriptions/', {
    token,
    body: { product_id: JSON.parse(product.body ?? '{}').id, customer_id: world.demo.customer_id },
  });
  if (subscribed.status !== 201) throw new Error(`bench metered subscription: ${subscribed.status}`);
  return JSON.parse(subscribed.body ?? '{}').id as string;
}

let benchMetered: string | undefined;

export default defineCard({
  name: 'get-subscription',
  sample: {
    label: 'Get Subscription (unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
  },
  iam: async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token });
    const metered = await freshMeteredSubscription(world);
    return [
      step('a subscription', await get(world.demo.subscription_id), 200),
      step('a subscription with a metered price and usage', await get(metered.id), 200),
      step('an unknown subscription', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      expect(theirs.status).toBe(201);
      return [['subscription of another organization', theirs.body.id as string]];
    },
    send: (id) => world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-subscription',
      label: 'Get Subscription',
      status: 200,
      target: 3,
      send: (world) =>
        world.call('get-subscription', 'GET', `/v1/subscriptions/${world.demo.subscription_id}`, {
          token: world.demo.personal_access_token,
        }),
    },
    {
      key: 'get-subscription-metered',
      label: 'Get Subscription (one metered price, 3 events this period)',
      status: 200,
      // Auth, the subscription, its customer and product, its meter, the meter's usage Query.
      target: 5,
      prepare: async (world) => {
        benchMetered ??= await benchMeteredSubscription(world);
      },
      send: (world) =>
        world.call('get-subscription', 'GET', `/v1/subscriptions/${benchMetered}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
