import { randomUUID } from 'node:crypto';
import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
import { portalRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-customer-subscription',
  sample: {
    label: 'Get Customer Subscription (portal, unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
  },
  iam: async (world) => {
    const id = await freshSubscription(world);
    const get = (subscription: string) =>
      world.call('GET', `/v1/customer-portal/subscriptions/${subscription}`, {
        token: world.demo.customer_session_token,
      });
    const metered = await freshMeteredSubscription(world);
    return [
      step('its own subscription', await get(id), 200),
      step('its own subscription with a metered price and usage', await get(metered.id), 200),
      step('an unknown one', await get(randomUUID()), 404),
    ];
  },
  isolation: () => portalRow('GET'),
  dynamoWork: [
    {
      key: 'get-customer-subscription',
      label: 'Get Customer Subscription',
      status: 200,
      target: 3,
      send: (world) =>
        world.call(
          'get-customer-subscription',
          'GET',
          `/v1/customer-portal/subscriptions/${world.demo.customer_subscription_id}`,
          { token: world.demo.customer_session_token },
        ),
    },
  ],
});
