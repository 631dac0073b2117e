import { randomUUID } from 'node:crypto';
import { PRODUCT } from '#test/bench/fixture.ts';
import { benchRun } from '#test/bench/work-kit.ts';
import { run, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedMeter } from './get-meter.ts';

export default defineCard({
  name: 'update-product',
  sample: {
    // A new name per event, so that every request writes.
    label: 'Update Product (renamed)',
    status: 200,
    params: { id: PRODUCT },
    body: () => ({ name: `Free ${Math.random().toString(36).slice(2)}` }),
  },
  iam: async (world) => {
    // A fresh product per run, through Create Product (its own function and policy).
    const created = await world.call('POST', '/v1/products/', {
      token: world.demo.personal_access_token,
      // Recurring: a metered price is added below.
      body: {
        name: `IAM update ${run}`,
        recurring_interval: 'month',
        prices: [{ amount_type: 'fixed', price_amount: 100 }],
      },
    });
    if (created.status !== 201) throw new Error(`Create Product answered ${created.status}`);
    const patch = (id: string, body: unknown) =>
      world.call('PATCH', `/v1/products/${id}`, { token: world.demo.personal_access_token, body });
    const id = created.body.id as string;
    return [
      // Entries move (name, price) and the product leaves one view for another (archived).
      step(
        'rename, reprice and archive',
        await patch(id, { name: `IAM renamed ${run}`, is_archived: true, prices: [{ amount_type: 'free' }] }),
        200,
      ),
      step('unarchive', await patch(id, { is_archived: false }), 200),
      // A metered price added: the meter it names is read (one batch).
      step(
        'add a metered price',
        await patch(id, {
          prices: [
            { amount_type: 'free' },
            {
              amount_type: 'metered_unit',
              unit_amount: '2',
              meter_id: await seedMeter(world, world.demo.organization_id),
            },
          ],
        }),
        200,
      ),
      step('an unknown product', await patch(randomUUID(), { name: 'nobody' }), 404),
    ];
  },
  isolation: ({ world, deletedProductId }) => ({
    ids: async () => [
      ['product of another organization', world.demo.other_organization.free_product_id],
      ['deleted product', deletedProductId],
    ],
    send: (id) =>
      world.call('PATCH', `/v1/products/${id}`, {
        token: world.demo.personal_access_token,
        body: { name: 'taken over', is_archived: true },
      }),
  }),
  dynamoWork: [
    {
      key: 'update-product',
      label: 'Update Product (renamed: its name entries move)',
      status: 200,
      target: 3,
      send: (world, i) =>
        world.call('update-product', 'PATCH', `/v1/products/${world.demo.paid_product_id}`, {
          token: world.demo.personal_access_token,
          body: { name: `Pro plan ${benchRun}-${i}` },
        }),
    },
  ],
});
