import { benchRun } from '#test/bench/work-kit.ts';
import { key, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

const definition = {
  filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: 'api.call' }] },
  aggregation: { func: 'sum', property: 'metadata.tokens' },
};

export default defineCard({
  name: 'create-meter',
  sample: {
    label: 'Create Meter',
    status: 201,
    body: { name: 'Tokens used', ...definition },
  },
  iam: async (world) => {
    const create = (idempotencyKey: string, body: unknown) =>
      world.call('POST', '/v1/meters/', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': idempotencyKey },
        body,
      });
    const created = await create(key('meter'), { name: 'IAM tokens', ...definition });
    const replayed = await create(key('meter'), { name: 'IAM tokens', ...definition });
    // Refused by the service after the key is claimed (a custom unit without its label).
    const refused = await create(key('custom'), { name: 'IAM custom', unit: 'custom', ...definition });
    const retried = await create(key('custom'), { name: 'IAM custom', unit: 'custom', ...definition });
    return [
      step('create', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  isolation: {
    namesNoResource:
      'a new meter names no existing resource; a foreign organization_id is refused as an unknown one (meters.test.ts)',
  },
  dynamoWork: [
    {
      key: 'create-meter',
      label: 'Create Meter (the meter, 4 list entries and its event, one transaction)',
      status: 201,
      target: 2,
      send: (world, i) =>
        world.call('create-meter', 'POST', '/v1/meters/', {
          token: world.demo.personal_access_token,
          body: { name: `Bench meter ${benchRun}-${i}`, ...definition },
        }),
    },
  ],
});
