import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedCustomerMeter } from './get-customer-meter.ts';

export default defineCard({
  name: 'list-customer-meters',
  sample: {
    label: 'List Customer Meters',
    status: 200,
  },
  iam: async (world) => {
    await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const list = (query: string) =>
      world.call('GET', `/v1/customer-meters/?${query}`, { token: world.demo.personal_access_token });
    return [
      step('the whole list', await list('sorting=-created_at'), 200),
      step('a customer', await list(`customer_id=${world.demo.customer_id}`), 200),
      step('an external id', await list(`external_customer_id=${world.demo.customer_external_id}`), 200),
    ];
  },
  isolation: {
    namesNoResource:
      'a list names no resource by id: another organization, its customer or its meter named in a filter contributes nothing, exactly as an unknown one (customer-meters.test.ts)',
  },
  dynamoWork: [
    {
      key: 'list-customer-meters',
      label: 'List Customer Meters (a customer)',
      status: 200,
      target: 6,
      prepare: async (world) => {
        if (benchSeeded) return;
        await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
        benchSeeded = true;
      },
      send: (world) =>
        world.call(
          'list-customer-meters',
          'GET',
          `/v1/customer-meters/?customer_id=${world.demo.customer_id}`,
          {
            token: world.demo.personal_access_token,
          },
        ),
    },
  ],
});

let benchSeeded = false;
