import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-meters',
  sample: {
    label: 'List Meters',
    status: 200,
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/meters/?${query}`, { token: world.demo.personal_access_token });
    return [
      step('the whole list', await list('sorting=-created_at'), 200),
      step('a view', await list('is_archived=false&sorting=name'), 200),
      step('a name prefix', await list('query=api'), 200),
    ];
  },
  isolation: {
    namesNoResource:
      'a list names no resource by id: another organization named in organization_id contributes nothing, exactly as an unknown one (meters.test.ts)',
  },
  dynamoWork: [
    {
      key: 'list-meters',
      label: 'List Meters (by name)',
      status: 200,
      target: 3,
      send: (world) =>
        world.call('list-meters', 'GET', '/v1/meters/?limit=10', { token: world.demo.personal_access_token }),
    },
  ],
});
