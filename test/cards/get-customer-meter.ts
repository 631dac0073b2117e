import { randomUUID } from 'node:crypto';
import { customerMeterId } from '#shared/data/customer-meters.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { CUSTOMER_METER } from '#test/bench/fixture.ts';
import type { LocalWorld } from '#test/bench/local-table.ts';
import { step } from '#test/support/iam-kit.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';

/**
 * A customer meter of `customerId` in `organizationId`: a new meter counting events of a name of its
 * own (no other meter counts them), and `events` such events of the customer folded by the meter
 * aggregator itself (one stream batch, operator access).
 */
export async function seedCustomerMeter(
  world: World | LocalWorld,
  organizationId: string,
  customerId: string,
  events = 3,
): Promise<string> {
  const name = `seeded.${randomUUID()}`;
  const meter = newMeter(
    {
      name: `Seeded ${name.slice(7, 15)}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation: { func: 'count' },
    },
    organizationId,
    world.admin.now(),
  );
  await storeNewMeter(world.admin.table, meter);
  const meterId = meter.id;
  const ingestedAt = new Date(Math.max(Date.now(), world.admin.now().getTime()) + 1).toISOString();
  await aggregateEvents(
    { table: world.admin.table, now: () => new Date() },
    `seed-${randomUUID()}`,
    Array.from({ length: events }, (_, i) => ({
      sequence: String(i + 1),
      event: {
        id: randomUUID(),
        organization_id: organizationId,
        name,
        timestamp_us: Date.parse(ingestedAt) * 1000,
        external_id: null,
        customer_id: customerId,
        external_customer_id: null,
        metadata: '{}',
        ingest_request: randomUUID(),
        ingested_at: ingestedAt,
      },
    })),
  );
  return customerMeterId(customerId, meterId);
}

export default defineCard({
  name: 'get-customer-meter',
  sample: {
    label: 'Get Customer Meter',
    status: 200,
    params: { id: CUSTOMER_METER },
  },
  iam: async (world) => {
    const mine = await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const get = (id: string) =>
      world.call('GET', `/v1/customer-meters/${id}`, { token: world.demo.personal_access_token });
    return [
      step('a customer meter', await get(mine), 200),
      step('an unknown customer meter', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => [
      [
        'customer meter of another organization',
        await seedCustomerMeter(
          world,
          world.demo.other_organization.organization_id,
          world.demo.other_organization.customer_id,
        ),
      ],
    ],
    send: (id) => world.call('GET', `/v1/customer-meters/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-customer-meter',
      label: 'Get Customer Meter (one hour of usage)',
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
        world.call('get-customer-meter', 'GET', `/v1/customer-meters/${benchCustomerMeter}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});

let benchCustomerMeter: string | undefined;
