import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { createSubscription, portalSubscriptions } from '#test/bench/work-kit.ts';
import { freshSubscription, step } from '#test/support/iam-kit.ts';
import { portalRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'update-customer-subscription',
  sample: {
    label: 'Update Customer Subscription (portal, unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
    body: { cancel_at_period_end: true, cancellation_reason: 'unused' },
  },
  iam: async (world) => {
    const id = await freshSubscription(world);
    const patch = (body: unknown) =>
      world.call('PATCH', `/v1/customer-portal/subscriptions/${id}`, {
        token: world.demo.customer_session_token,
        body,
      });
    return [
      step(
        'cancel at period end',
        await patch({ cancel_at_period_end: true, cancellation_reason: 'unused' }),
        200,
      ),
      step('uncancel', await patch({ cancel_at_period_end: false }), 200),
      step('uncancel again', await patch({ cancel_at_period_end: false }), 409),
    ];
  },
  isolation: () => portalRow('PATCH'),
  dynamoWork: [
    {
      key: 'update-customer-subscription',
      label: 'Update Customer Subscription (uncancel)',
      status: 200,
      target: 4,
      prepare: async (world, i) => {
        const id = JSON.parse((await createSubscription(world)).body ?? '{}').id;
        await world.call(
          'cancel-customer-subscription',
          'DELETE',
          `/v1/customer-portal/subscriptions/${id}`,
          {
            token: world.demo.customer_session_token,
          },
        );
        portalSubscriptions[i] = id;
      },
      send: (world, i) =>
        world.call(
          'update-customer-subscription',
          'PATCH',
          `/v1/customer-portal/subscriptions/${portalSubscriptions[i]}`,
          {
            token: world.demo.customer_session_token,
            body: { cancel_at_period_end: false },
          },
        ),
    },
  ],
});
