import { randomUUID } from 'node:crypto';
import { DEMO_CUSTOMER_EXTERNAL_ID } from '#scripts/local/seed.ts';
import { EXTERNAL_ID } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { externalIdRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-customer-external',
  sample: {
    label: 'Get Customer by external id',
    status: 200,
    params: { external_id: EXTERNAL_ID },
  },
  iam: async (world) => {
    const get = (externalId: string) =>
      world.call('GET', `/v1/customers/external/${externalId}`, { token: world.demo.personal_access_token });
    return [
      step('a customer', await get(DEMO_CUSTOMER_EXTERNAL_ID), 200),
      step('an unknown external id', await get(randomUUID()), 404),
    ];
  },
  isolation: () => externalIdRow('GET'),
  dynamoWork: [
    {
      key: 'get-customer-external',
      label: 'Get Customer by external id',
      status: 200,
      target: 3,
      send: (world) =>
        world.call(
          'get-customer-external',
          'GET',
          `/v1/customers/external/${world.demo.customer_external_id}`,
          {
            token: world.demo.personal_access_token,
          },
        ),
    },
  ],
});
