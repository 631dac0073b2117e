import { benchRun } from '#test/bench/work-kit.ts';
import { key, run, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedMeter } from './get-meter.ts';

export default defineCard({
  name: 'create-product',
  sample: {
    label: 'Create Product',
    status: 201,
    body: {
      name: 'Bench plan',
      recurring_interval: 'month',
      prices: [{ amount_type: 'fixed', price_amount: 0 }],
    },
  },
  iam: async (world) => {
    const create = (body: unknown, idempotencyKey: string) =>
      world.call('POST', '/v1/products/', {
        token: world.demo.personal_access_token,
        body,
        headers: { 'idempotency-key': idempotencyKey },
      });
    const product = {
      name: `IAM ${run}`,
      recurring_interval: 'month',
      prices: [{ amount_type: 'fixed', price_amount: 0 }],
    };
    const created = await create(product, key('product'));
    const replayed = await create(product, key('product'));
    // No price in the organization's currency: refused after claiming its key, which is released.
    const refused = await create(
      { ...product, prices: [{ ...product.prices[0], price_currency: 'eur' }] },
      key('eur'),
    );
    const retried = await create(
      { ...product, prices: [{ ...product.prices[0], price_currency: 'eur' }] },
      key('eur'),
    );
    // A metered price: the meter it names is read (one batch) before the product is written.
    const meterId = await seedMeter(world, world.demo.organization_id);
    const metered = await create(
      {
        ...product,
        name: `IAM metered ${run}`,
        prices: [...product.prices, { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: meterId }],
      },
      key('metered'),
    );
    return [
      step('create', created, 201),
      step('with a metered price (its meter read)', metered, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  isolation: {
    namesNoResource:
      'a new product names no existing resource; a foreign organization_id is covered by its own test',
  },
  dynamoWork: [
    {
      key: 'create-product',
      label: 'Create Product (the product and 20 list items, one transaction)',
      status: 201,
      target: 3,
      send: (world, i) =>
        world.call('create-product', 'POST', '/v1/products/', {
          token: world.demo.personal_access_token,
          body: {
            name: `Bench plan ${benchRun}-${i}`,
            recurring_interval: 'month',
            prices: [{ amount_type: 'fixed', price_amount: 0 }],
          },
        }),
    },
  ],
});
