import { randomUUID } from 'node:crypto';
import { DEMO_CUSTOMER_EXTERNAL_ID } from '#scripts/local/seed.ts';
import { EXTERNAL_ID } from '#test/bench/fixture.ts';
import { freshMeteredSubscription, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedCustomerMeter } from './get-customer-meter.ts';
import { stateCustomer } from './get-customer-state.ts';

export default defineCard({
  name: 'get-customer-state-external',
  sample: {
    label: 'Get Customer State by external id',
    status: 200,
    params: { external_id: EXTERNAL_ID },
  },
  iam: async (world) => {
    // The demo customer has an active subscription; a customer meter makes every read run.
    await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const get = (externalId: string) =>
      world.call('GET', `/v1/customers/external/${encodeURIComponent(externalId)}/state`, {
        token: world.demo.personal_access_token,
      });
    return [
      step(
        'a customer with an active subscription and a customer meter',
        await get(DEMO_CUSTOMER_EXTERNAL_ID),
        200,
      ),
      step(
        'a customer with a metered subscription and usage (its meters read)',
        await freshMeteredSubscription(world).then(() => get(DEMO_CUSTOMER_EXTERNAL_ID)),
        200,
      ),
      step('an unknown external id', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world, deletedExternalId, foreignExternalId }) => ({
    ids: async () => [
      ['external id of another organization’s customer', foreignExternalId],
      ['external id of a deleted customer', deletedExternalId],
    ],
    send: (id) =>
      world.call('GET', `/v1/customers/external/${encodeURIComponent(id)}/state`, {
        token: world.demo.personal_access_token,
      }),
  }),
  dynamoWork: [
    {
      key: 'get-customer-state-external',
      label: 'Get Customer State by external id (one active subscription, one customer meter)',
      status: 200,
      target: 9,
      prepare: async (world) => {
        benchCustomer ??= await stateCustomer(world);
      },
      send: (world) =>
        world.call(
          'get-customer-state-external',
          'GET',
          `/v1/customers/external/${encodeURIComponent(benchCustomer?.externalId ?? '')}/state`,
          { token: world.demo.personal_access_token },
        ),
    },
  ],
});

let benchCustomer: { id: string; externalId: string } | undefined;
