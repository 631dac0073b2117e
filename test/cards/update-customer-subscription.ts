import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { createSubscription, portalSubscriptions } from '#test/bench/work-kit.ts';
import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
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
    const patch = (body: unknown, which = id) =>
      world.call('PATCH', `/v1/customer-portal/subscriptions/${which}`, {
        token: world.demo.customer_session_token,
        body,
      });
    const canceled = await patch({ cancel_at_period_end: true, cancellation_reason: 'unused' });
    const uncanceled = await patch({ cancel_at_period_end: false });
    const again = await patch({ cancel_at_period_end: false });
    // A metered subscription with usage: each change reads its meter and usage before the write.
    const metered = (await freshMeteredSubscription(world)).id;
    const meteredCanceled = await patch({ cancel_at_period_end: true }, metered);
    const meteredUncanceled = await patch({ cancel_at_period_end: false }, metered);
    return [
      step('cancel at period end', canceled, 200),
      step('uncancel', uncanceled, 200),
      step('uncancel again', again, 409),
      step('cancel a metered subscription with usage (its meters read)', meteredCanceled, 200),
      step('uncancel a metered subscription with usage (its meters read)', meteredUncanceled, 200),
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
