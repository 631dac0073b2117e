import { CUSTOMER, PRODUCT } from '#test/bench/fixture.ts';
import { benchRun, createSubscription } from '#test/bench/work-kit.ts';
import { key, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'create-subscription',
  sample: {
    label: 'Create Subscription',
    status: 201,
    body: { product_id: PRODUCT, customer_id: CUSTOMER, metadata: { plan: 'bench' } },
  },
  iam: async (world) => {
    const subscribe = (key: string, productId: string) =>
      world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': key },
        body: { product_id: productId, customer_id: world.demo.customer_id },
      });
    const created = await subscribe(key('ok'), world.demo.free_product_id);
    const replayed = await subscribe(key('ok'), world.demo.free_product_id);
    const refused = await subscribe(key('paid'), world.demo.paid_product_id);
    const retried = await subscribe(key('paid'), world.demo.paid_product_id);
    return [
      step('subscribe', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  isolation: ({ world, deletedCustomerId }) => ({
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: { product_id: world.demo.free_product_id, customer_id: id },
      }),
  }),
  dynamoWork: [
    {
      key: 'create-subscription',
      label: 'Create Subscription',
      status: 201,
      target: 3,
      send: (world) => createSubscription(world),
    },
    {
      key: 'create-subscription+key',
      label: 'Create Subscription + Idempotency-Key (first use)',
      status: 201,
      target: 5,
      send: (world, i) => createSubscription(world, `bench-${benchRun}-cs-${i}`),
    },
    {
      key: 'create-subscription+replay',
      label: 'Create Subscription + Idempotency-Key (replay)',
      status: 201,
      target: 5,
      prepare: (world, i) => createSubscription(world, `bench-${benchRun}-csr-${i}`),
      send: (world, i) => createSubscription(world, `bench-${benchRun}-csr-${i}`),
    },
  ],
});
