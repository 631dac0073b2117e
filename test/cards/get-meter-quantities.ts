import { randomUUID } from 'node:crypto';
import type { MeterAggregation } from '#shared/domain/meter.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { METER } from '#test/bench/fixture.ts';
import type { LocalWorld } from '#test/bench/local-table.ts';
import { step } from '#test/support/iam-kit.ts';
import type { World } from '#test/support/world.ts';
import { defineCard } from './card.ts';

/** One usage event to fold: its customer, when it arrived, its metadata. */
export interface SeedEvent {
  customer_id: string;
  ingested_at: string;
  metadata?: Record<string, unknown>;
}

/**
 * A meter of `organizationId` (created at `since`) counting events of a name of its own with
 * `aggregation`, and `events` of that name folded by the meter aggregator itself (one stream batch,
 * operator access), each counted in the hour it arrived in. Returns the meter's id.
 */
export async function seedMeterUsage(
  world: World | LocalWorld,
  organizationId: string,
  aggregation: MeterAggregation,
  events: readonly SeedEvent[],
  since = new Date('2024-01-01T00:00:00Z'),
): Promise<string> {
  const name = `quantities.${randomUUID()}`;
  const meter = newMeter(
    {
      name: `Seeded ${name.slice(11, 19)}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation,
    },
    organizationId,
    since,
  );
  await storeNewMeter(world.admin.table, meter);
  await aggregateEvents(
    { table: world.admin.table, now: () => new Date() },
    `seed-${randomUUID()}`,
    events.map((event, i) => ({
      sequence: String(i + 1),
      event: {
        id: randomUUID(),
        organization_id: organizationId,
        name,
        timestamp_us: Date.parse(event.ingested_at) * 1000,
        external_id: null,
        customer_id: event.customer_id,
        external_customer_id: null,
        metadata: JSON.stringify(event.metadata ?? {}),
        ingest_request: randomUUID(),
        ingested_at: event.ingested_at,
      },
    })),
  );
  return meter.id;
}

const WINDOW = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=hour';
const DAY_WINDOW = 'start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-03T00:00:00Z&interval=day';

export default defineCard({
  name: 'get-meter-quantities',
  sample: {
    label: 'Get Meter Quantities',
    status: 200,
    params: { id: METER },
    query: 'start_timestamp=2025-12-31T00:00:00Z&end_timestamp=2026-01-01T00:00:00Z&interval=day',
  },
  iam: async (world) => {
    const customer = world.demo.customer_id;
    const at = '2025-06-01T10:15:00.000Z';
    const counted = await seedMeterUsage(world, world.demo.organization_id, { func: 'count' }, [
      { customer_id: customer, ingested_at: at },
    ]);
    const unique = await seedMeterUsage(
      world,
      world.demo.organization_id,
      { func: 'unique', property: 'region' },
      [{ customer_id: customer, ingested_at: at, metadata: { region: 'eu' } }],
    );
    const get = (id: string, query = '') =>
      world.call('GET', `/v1/meters/${id}/quantities?${WINDOW}${query}`, {
        token: world.demo.personal_access_token,
      });
    return [
      step('a meter, every customer (its organization’s list)', await get(counted), 200),
      step('a customer by id', await get(counted, `&customer_id=${customer}`), 200),
      step(
        'a customer by id, by the day (its customer meter by key: its roll-up)',
        await world.call('GET', `/v1/meters/${counted}/quantities?${DAY_WINDOW}&customer_id=${customer}`, {
          token: world.demo.personal_access_token,
        }),
        200,
      ),
      step(
        'a customer by external id',
        await get(counted, `&external_customer_id=${world.demo.customer_external_id}`),
        200,
      ),
      step('a unique meter (its values)', await get(unique, `&customer_id=${customer}`), 200),
      step('an unknown meter', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => [
      [
        'meter of another organization',
        await seedMeterUsage(world, world.demo.other_organization.organization_id, { func: 'count' }, [
          { customer_id: world.demo.other_organization.customer_id, ingested_at: '2025-06-01T10:00:00.000Z' },
        ]),
      ],
    ],
    send: (id) =>
      world.call('GET', `/v1/meters/${id}/quantities?${WINDOW}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-meter-quantities',
      label: 'Get Meter Quantities (a customer, one day by hour)',
      status: 200,
      target: 4,
      prepare: async (world) => {
        benchMeter ??= await seedMeterUsage(world, world.demo.organization_id, { func: 'count' }, [
          { customer_id: world.demo.customer_id, ingested_at: '2025-06-01T10:15:00.000Z' },
        ]);
      },
      send: (world) =>
        world.call(
          'get-meter-quantities',
          'GET',
          `/v1/meters/${benchMeter}/quantities?${WINDOW}&customer_id=${world.demo.customer_id}`,
          { token: world.demo.personal_access_token },
        ),
    },
  ],
});

let benchMeter: string | undefined;
