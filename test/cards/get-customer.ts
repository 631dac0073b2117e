import { randomUUID } from 'node:crypto';
import { CUSTOMER } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-customer',
  sample: {
    label: 'Get Customer',
    status: 200,
    params: { id: CUSTOMER },
  },
  iam: async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/customers/${id}`, { token: world.demo.personal_access_token });
    return [
      step('a customer', await get(world.demo.customer_id), 200),
      step('an unknown customer', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world, deletedCustomerId }) => ({
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) => world.call('GET', `/v1/customers/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-customer',
      label: 'Get Customer',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('get-customer', 'GET', `/v1/customers/${world.demo.customer_id}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
