import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { createSubscription, portalSubscriptions } from '#test/bench/work-kit.ts';
import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
import { portalRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'cancel-customer-subscription',
  sample: {
    label: 'Cancel Customer Subscription (portal, unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
  },
  iam: async (world) => {
    const id = await freshSubscription(world);
    const cancel = (which: string) =>
      world.call('DELETE', `/v1/customer-portal/subscriptions/${which}`, {
        token: world.demo.customer_session_token,
      });
    return [
      step('cancel at period end', await cancel(id), 200),
      step('cancel again', await cancel(id), 403),
      step(
        'cancel a metered subscription with usage (its meters read)',
        await cancel((await freshMeteredSubscription(world)).id),
        200,
      ),
    ];
  },
  isolation: () => portalRow('DELETE'),
  dynamoWork: [
    {
      key: 'cancel-customer-subscription',
      label: 'Cancel Customer Subscription (at period end)',
      status: 200,
      target: 4,
      prepare: async (world, i) => {
        portalSubscriptions[i] = JSON.parse((await createSubscription(world)).body ?? '{}').id;
      },
      send: (world, i) =>
        world.call(
          'cancel-customer-subscription',
          'DELETE',
          `/v1/customer-portal/subscriptions/${portalSubscriptions[i]}`,
          {
            token: world.demo.customer_session_token,
          },
        ),
    },
  ],
});
