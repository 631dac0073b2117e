import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { freshMeteredSubscription, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-subscription',
  sample: {
    label: 'Get Subscription (unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
  },
  iam: async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token });
    const metered = await freshMeteredSubscription(world);
    return [
      step('a subscription', await get(world.demo.subscription_id), 200),
      step('a subscription with a metered price and usage', await get(metered.id), 200),
      step('an unknown subscription', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world }) => ({
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      expect(theirs.status).toBe(201);
      return [['subscription of another organization', theirs.body.id as string]];
    },
    send: (id) => world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-subscription',
      label: 'Get Subscription',
      status: 200,
      target: 3,
      send: (world) =>
        world.call('get-subscription', 'GET', `/v1/subscriptions/${world.demo.subscription_id}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
