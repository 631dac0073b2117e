import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-event-names',
  sample: {
    label: 'List Event Names',
    status: 200,
    query: 'limit=10',
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/events/names${query}`, { token: world.demo.personal_access_token });
    return [step('a page', await list('?limit=5&sorting=name'), 200)];
  },
  isolation: {
    namesNoResource: 'a list names no resource: test/integration/usage-events.test.ts',
  },
  dynamoWork: [
    {
      key: 'list-event-names',
      label: 'List Event Names',
      status: 200,
      target: 17,
      send: (world) =>
        world.call('list-event-names', 'GET', '/v1/events/names', {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
