import { randomUUID } from 'node:crypto';
import { run, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-events',
  sample: {
    label: 'List Events',
    status: 200,
    query: 'limit=10',
  },
  iam: async (world) => {
    const token = world.demo.personal_access_token;
    // The organization's newest event names the demo customer, so the page embeds it (BatchGetItem on
    // CUSTOMER#*): through Ingest Events (its own function and policy), since the seed holds no event
    // with a customer and a world of its own holds no other scenario's events.
    const ingested = await world.call('POST', '/v1/events/ingest', {
      token,
      body: {
        events: [
          {
            name: 'iam',
            customer_id: world.demo.customer_id,
            external_id: `iam-list-${run}-${randomUUID()}`,
          },
        ],
      },
    });
    if (ingested.status !== 200) throw new Error(`Ingest Events answered ${ingested.status}`);
    const list = (query: string) => world.call('GET', `/v1/events/${query}`, { token });
    return [
      step('a page, newest first', await list('?limit=5'), 200),
      step(
        'a time window, by customer',
        await list(`?start_timestamp=2000-01-01T00:00:00Z&customer_id=${world.demo.customer_id}`),
        200,
      ),
    ];
  },
  isolation: {
    namesNoResource:
      'a list names no resource (a filter naming another tenant finds nothing): test/integration/usage-events.test.ts',
  },
  dynamoWork: [
    {
      key: 'list-events',
      label: 'List Events (a page of 10, no window)',
      status: 200,
      target: 36,
      send: (world) =>
        world.call('list-events', 'GET', '/v1/events/?limit=10', { token: world.demo.personal_access_token }),
    },
  ],
});
