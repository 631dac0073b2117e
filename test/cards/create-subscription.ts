import { createCustomer } from '#scripts/admin/commands.ts';
import { CUSTOMER, PRODUCT } from '#test/bench/fixture.ts';
import { benchRun, createSubscription } from '#test/bench/work-kit.ts';
import { freshMeteredProduct, key, step } from '#test/support/iam-kit.ts';
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
    // A metered product with usage: its meter and usage read before the write (answer and events).
    const metered = await subscribe(key('metered'), await freshMeteredProduct(world));
    const replayed = await subscribe(key('ok'), world.demo.free_product_id);
    const refused = await subscribe(key('paid'), world.demo.paid_product_id);
    const retried = await subscribe(key('paid'), world.demo.paid_product_id);
    // An answer kept in parts (shared/data/idempotency.ts): its replay reads them.
    const emoji = (n: number) => '😀'.repeat(n);
    const metadata = Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [`${emoji(38)}${String(i).padStart(2, '0')}`, emoji(500)]),
    );
    const large = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      // A fresh address each run: the IAM mutation suite runs this scenario once per grant element.
      email: `${emoji(295)}${Math.random().toString(36).slice(2, 10)}@example.com`,
      name: emoji(256),
      metadata,
    });
    const subscribeLarge = () =>
      world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': key('large') },
        body: { product_id: world.demo.free_product_id, customer_id: large.id, metadata },
      });
    const largeCreated = await subscribeLarge();
    const largeReplayed = await subscribeLarge();
    return [
      step('subscribe', created, 201),
      step('subscribe to a metered product with usage (its meters read)', metered, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('subscribe with an answer kept in parts', largeCreated, 201),
      step('replay of an answer kept in parts', largeReplayed, 201, { reply: largeCreated, field: 'id' }),
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
