import { randomUUID } from 'node:crypto';
import { usageEventId } from '#shared/data/usage-events.ts';
import { USAGE_EVENT } from '#test/bench/fixture.ts';
import { benchRun } from '#test/bench/work-kit.ts';
import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-event',
  sample: {
    label: 'Get Event',
    status: 200,
    params: { id: USAGE_EVENT },
  },
  iam: async (world) => {
    const token = world.demo.personal_access_token;
    const externalId = `iam-get-${randomUUID()}`;
    const ingested = await world.call('POST', '/v1/events/ingest', {
      token,
      body: { events: [{ name: 'iam', customer_id: world.demo.customer_id, external_id: externalId }] },
    });
    // Its id follows from (organization, external_id): no list read (its index lags) to find it.
    const id = usageEventId(world.demo.organization_id, externalId);
    return [
      step('ingest one', ingested, 200),
      step('an event', await world.call('GET', `/v1/events/${id}`, { token }), 200),
      step('an unknown event', await world.call('GET', `/v1/events/${randomUUID()}`, { token }), 404),
    ];
  },
  isolation: ({ world, bothOrgsPat }) => ({
    ids: async () => {
      const externalId = `isolation-${randomUUID()}`;
      await world.call('POST', '/v1/events/ingest', {
        token: bothOrgsPat,
        body: {
          events: [
            {
              name: 'isolation',
              organization_id: world.demo.other_organization.organization_id,
              customer_id: world.demo.other_organization.customer_id,
              external_id: externalId,
            },
          ],
        },
      });
      return [
        [
          'event of another organization',
          usageEventId(world.demo.other_organization.organization_id, externalId),
        ],
      ];
    },
    send: (id) => world.call('GET', `/v1/events/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-event',
      label: 'Get Event',
      status: 200,
      target: 3,
      prepare: (world, i) =>
        world.call('ingest-events', 'POST', '/v1/events/ingest', {
          token: world.demo.personal_access_token,
          body: {
            events: [
              {
                name: 'api_call',
                customer_id: world.demo.customer_id,
                external_id: `bench-get-${benchRun}-${i}`,
              },
            ],
          },
        }),
      send: (world, i) =>
        world.call(
          'get-event',
          'GET',
          `/v1/events/${usageEventId(world.demo.organization_id, `bench-get-${benchRun}-${i}`)}`,
          { token: world.demo.personal_access_token },
        ),
    },
  ],
});
