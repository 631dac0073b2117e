import { randomUUID } from 'node:crypto';
import { CUSTOMER_METER } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedCustomerMeter } from './get-customer-meter.ts';

export default defineCard({
  name: 'get-portal-meter',
  sample: {
    label: 'Get Portal Meter',
    status: 200,
    params: { id: CUSTOMER_METER },
  },
  iam: async (world) => {
    const mine = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const theirs = await seedCustomerMeter(world, world.demo.organization_id, world.demo.second_customer_id);
    const get = (id: string) =>
      world.call('GET', `/v1/customer-portal/meters/${id}`, { token: world.demo.customer_session_token });
    return [
      step('its own customer meter', await get(mine), 200),
      step('another customer’s customer meter', await get(theirs), 404),
      step('an unknown customer meter', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => [
      [
        'customer meter of another customer of the organization',
        await seedCustomerMeter(world, world.demo.organization_id, world.demo.second_customer_id),
      ],
      [
        'customer meter of another organization',
        await seedCustomerMeter(
          world,
          world.demo.other_organization.organization_id,
          world.demo.other_organization.customer_id,
        ),
      ],
    ],
    send: (id) =>
      world.call('GET', `/v1/customer-portal/meters/${id}`, { token: world.demo.customer_session_token }),
  }),
  dynamoWork: [
    {
      key: 'get-portal-meter',
      label: 'Get Portal Meter (one hour of usage)',
      status: 200,
      target: 4,
      prepare: async (world) => {
        benchCustomerMeter ??= await seedCustomerMeter(
          world,
          world.demo.organization_id,
          world.demo.customer_id,
        );
      },
      send: (world) =>
        world.call('get-portal-meter', 'GET', `/v1/customer-portal/meters/${benchCustomerMeter}`, {
          token: world.demo.customer_session_token,
        }),
    },
  ],
});

let benchCustomerMeter: string | undefined;
