import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-products',
  sample: {
    label: 'List Products (live, by name)',
    status: 200,
    query: 'is_archived=false&sorting=name',
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/products/?${query}`, { token: world.demo.personal_access_token });
    return [
      step('the whole list', await list('sorting=-created_at'), 200),
      step('a view', await list('is_archived=false&is_recurring=true&sorting=name'), 200),
      step('a name prefix', await list('query=free'), 200),
    ];
  },
  isolation: {
    namesNoResource:
      'a list names no resource by id: another organization named in organization_id contributes nothing, exactly as an unknown one (products.test.ts)',
  },
  dynamoWork: [
    {
      key: 'list-products',
      label: 'List Products (live ones, by name)',
      status: 200,
      target: 3,
      send: (world) =>
        world.call('list-products', 'GET', '/v1/products/?is_archived=false&sorting=name', {
          token: world.demo.personal_access_token,
        }),
    },
    {
      key: 'list-products-query',
      label: 'List Products (name prefix)',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('list-products', 'GET', '/v1/products/?query=pro', {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
