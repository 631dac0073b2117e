import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-customers',
  sample: {
    label: 'List Customers',
    status: 200,
    query: 'limit=10',
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/customers/${query}`, { token: world.demo.personal_access_token });
    return [
      step('a page', await list('?limit=2&sorting=name'), 200),
      step('by e-mail address', await list('?email=ada@customer.example'), 200),
      step('by query', await list('?query=a'), 200),
    ];
  },
  isolation: {
    namesNoResource:
      'a list names no resource (a filter naming another tenant finds nothing): see the List Customers test above',
  },
  dynamoWork: [
    {
      key: 'list-customers',
      label: 'List Customers (a page of 10)',
      status: 200,
      target: 4,
      send: (world) =>
        world.call('list-customers', 'GET', '/v1/customers/?limit=10&sorting=email', {
          token: world.demo.personal_access_token,
        }),
    },
    {
      key: 'list-customers-query',
      label: 'List Customers (query: name or e-mail prefix, external id)',
      status: 200,
      target: 5,
      send: (world) =>
        world.call('list-customers', 'GET', '/v1/customers/?query=ada', {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
