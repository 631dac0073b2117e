import { randomUUID } from 'node:crypto';
import { CUSTOMER } from '#test/bench/fixture.ts';
import { benchRun } from '#test/bench/work-kit.ts';
import { key, run, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'ingest-events',
  sample: {
    // A fresh external_id per request: a repeated one is a duplicate, stored once.
    label: 'Ingest Events (one event)',
    status: 200,
    body: () => ({
      events: [
        {
          name: 'api_call',
          customer_id: CUSTOMER,
          external_id: `bench-${Math.random().toString(36).slice(2)}`,
          metadata: { tokens: 3 },
        },
      ],
    }),
  },
  iam: async (world) => {
    const ingest = (body: unknown, idempotencyKey?: string) =>
      world.call('POST', '/v1/events/ingest', {
        token: world.demo.personal_access_token,
        body,
        ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
      });
    const events = [
      { name: 'iam', customer_id: world.demo.customer_id, external_id: `iam-${run}-${Date.now()}-a` },
      { name: 'iam', external_customer_id: `iam-${run}`, external_id: `iam-${run}-${Date.now()}-b` },
    ];
    const stored = await ingest({ events }, key('ingest'));
    const replayed = await ingest({ events }, key('ingest'));
    const again = await ingest({ events });
    // Refused after claiming its key: the claim is released, so the retry runs again.
    const refusedBody = { events: [{ name: 'iam', customer_id: randomUUID() }] };
    const unknown = await ingest(refusedBody, key('refused'));
    const retried = await ingest(refusedBody, key('refused'));
    return [
      step('two events, one by customer id', stored, 200),
      step('replay with the same key', replayed, 200),
      step('the same batch again: duplicates', again, 200),
      step('an unknown customer, refused after claiming its key', unknown, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  isolation: ({ world, deletedCustomerId }) => ({
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call('POST', '/v1/events/ingest', {
        token: world.demo.personal_access_token,
        body: { events: [{ name: 'isolation', customer_id: id }] },
      }),
  }),
  dynamoWork: [
    {
      key: 'ingest-events',
      label: 'Ingest Events (a batch of 100, one name, by customer id)',
      status: 200,
      target: 103,
      send: (world, i) =>
        world.call('ingest-events', 'POST', '/v1/events/ingest', {
          token: world.demo.personal_access_token,
          body: {
            events: Array.from({ length: 100 }, (_, n) => ({
              name: 'api_call',
              customer_id: world.demo.customer_id,
              external_id: `bench-${benchRun}-${i}-${n}`,
              metadata: { tokens: n, model: 'small' },
            })),
          },
        }),
    },
    {
      key: 'ingest-events-one',
      label: 'Ingest Events (one event)',
      status: 200,
      target: 4,
      send: (world, i) =>
        world.call('ingest-events', 'POST', '/v1/events/ingest', {
          token: world.demo.personal_access_token,
          body: {
            events: [
              {
                name: 'api_call',
                customer_id: world.demo.customer_id,
                external_id: `bench-one-${benchRun}-${i}`,
              },
            ],
          },
        }),
    },
  ],
});
