import { randomUUID } from 'node:crypto';
import { step } from '#test/support/iam-kit.ts';
import { emptyPage } from '#test/support/isolation-kit.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';
import { seedCustomerMeter } from './get-customer-meter.ts';

/** The meter id of a customer meter, as Get Customer Meter answers it (operator's token). */
async function meterOf(world: World, organizationPat: string, id: string) {
  const reply = await world.call('GET', `/v1/customer-meters/${id}`, { token: organizationPat });
  return reply.body.meter_id as string;
}

export default defineCard({
  name: 'list-portal-meters',
  sample: {
    label: 'List Portal Meters',
    status: 200,
  },
  iam: async (world) => {
    await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const list = (query: string) =>
      world.call('GET', `/v1/customer-portal/meters/?${query}`, { token: world.demo.customer_session_token });
    return [
      step('the whole list', await list('sorting=-created_at'), 200),
      step('by meter name', await list('query=seeded&sorting=meter_name'), 200),
      step('by meter id', await list(`meter_id=${randomUUID()}`), 200),
    ];
  },
  // A list names a resource by id in its `meter_id` filter: a meter whose customer meter is another
  // customer's (of the organization or of another) gives an empty page, exactly as an unknown one.
  isolation: ({ world }) => ({
    ids: async () => [
      [
        'meter counting only another customer of the organization',
        await meterOf(
          world,
          world.demo.personal_access_token,
          await seedCustomerMeter(world, world.demo.organization_id, world.demo.second_customer_id),
        ),
      ],
      [
        'meter of another organization',
        await meterOf(
          world,
          world.demo.other_organization.personal_access_token,
          await seedCustomerMeter(
            world,
            world.demo.other_organization.organization_id,
            world.demo.other_organization.customer_id,
          ),
        ),
      ],
    ],
    send: (id) =>
      world.call('GET', `/v1/customer-portal/meters/?meter_id=${id}`, {
        token: world.demo.customer_session_token,
      }),
    refuses: emptyPage,
  }),
  dynamoWork: [
    {
      key: 'list-portal-meters',
      label: 'List Portal Meters (one meter named)',
      status: 200,
      target: 4,
      prepare: async (world) => {
        if (benchMeter) return;
        const id = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
        const read = await world.call('get-customer-meter', 'GET', `/v1/customer-meters/${id}`, {
          token: world.demo.personal_access_token,
        });
        benchMeter = JSON.parse(read.body ?? '{}').meter_id;
      },
      send: (world) =>
        world.call('list-portal-meters', 'GET', `/v1/customer-portal/meters/?meter_id=${benchMeter}`, {
          token: world.demo.customer_session_token,
        }),
    },
  ],
});

let benchMeter: string | undefined;
