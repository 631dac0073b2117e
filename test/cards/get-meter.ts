import { randomUUID } from 'node:crypto';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { METER } from '#test/bench/fixture.ts';
import type { LocalWorld } from '#test/bench/local-table.ts';
import { step } from '#test/support/iam-kit.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';

/** A meter of `organizationId`, written as Create Meter writes it (operator access). */
export async function seedMeter(world: World | LocalWorld, organizationId: string): Promise<string> {
  const meter = newMeter(
    {
      name: `Seeded ${randomUUID().slice(0, 8)}`,
      filter: { conjunction: 'and', clauses: [] },
      aggregation: { func: 'count' },
    },
    organizationId,
    world.admin.now(),
  );
  await storeNewMeter(world.admin.table, meter);
  return meter.id;
}

export default defineCard({
  name: 'get-meter',
  sample: {
    label: 'Get Meter',
    status: 200,
    params: { id: METER },
  },
  iam: async (world) => {
    const mine = await seedMeter(world, world.demo.organization_id);
    const get = (id: string) =>
      world.call('GET', `/v1/meters/${id}`, { token: world.demo.personal_access_token });
    return [step('a meter', await get(mine), 200), step('an unknown meter', await get(randomUUID()), 404)];
  },
  isolation: ({ world }) => ({
    ids: async () => [
      [
        'meter of another organization',
        await seedMeter(world, world.demo.other_organization.organization_id),
      ],
    ],
    send: (id) => world.call('GET', `/v1/meters/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-meter',
      label: 'Get Meter',
      status: 200,
      target: 2,
      prepare: async (world) => {
        benchMeter ??= await seedMeter(world, world.demo.organization_id);
      },
      send: (world) =>
        world.call('get-meter', 'GET', `/v1/meters/${benchMeter}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});

let benchMeter: string | undefined;
