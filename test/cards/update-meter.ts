import { randomUUID } from 'node:crypto';
import { METER } from '#test/bench/fixture.ts';
import { benchRun } from '#test/bench/work-kit.ts';
import { run, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedMeter } from './get-meter.ts';

export default defineCard({
  name: 'update-meter',
  sample: {
    // A new name per event, so that every request writes.
    label: 'Update Meter (renamed)',
    status: 200,
    params: { id: METER },
    body: () => ({ name: `Calls ${Math.random().toString(36).slice(2)}` }),
  },
  iam: async (world) => {
    const id = await seedMeter(world, world.demo.organization_id);
    const patch = (meterId: string, body: unknown) =>
      world.call('PATCH', `/v1/meters/${meterId}`, { token: world.demo.personal_access_token, body });
    return [
      // Entries move (name) and the meter leaves one view for another (archived).
      step(
        'rename, redefine and archive',
        await patch(id, {
          name: `IAM renamed ${run}`,
          is_archived: true,
          aggregation: { func: 'unique', property: 'user' },
        }),
        200,
      ),
      step('unarchive', await patch(id, { is_archived: false }), 200),
      step('nothing to change (no write)', await patch(id, {}), 200),
      step('an unknown meter', await patch(randomUUID(), { name: 'nobody' }), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => [
      [
        'meter of another organization',
        await seedMeter(world, world.demo.other_organization.organization_id),
      ],
    ],
    send: (id) =>
      world.call('PATCH', `/v1/meters/${id}`, {
        token: world.demo.personal_access_token,
        body: { name: 'taken over', is_archived: true },
      }),
  }),
  dynamoWork: [
    {
      key: 'update-meter',
      label: 'Update Meter (renamed: its name entries move)',
      status: 200,
      target: 3,
      prepare: async (world) => {
        benchMeter ??= await seedMeter(world, world.demo.organization_id);
      },
      send: (world, i) =>
        world.call('update-meter', 'PATCH', `/v1/meters/${benchMeter}`, {
          token: world.demo.personal_access_token,
          body: { name: `Calls ${benchRun}-${i}` },
        }),
    },
  ],
});

let benchMeter: string | undefined;
