import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { createSubscription, subscriptionsToChange } from '#test/bench/work-kit.ts';
import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
import { lifecycleRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'update-subscription',
  sample: {
    label: 'Update Subscription (unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
    body: { cancel_at_period_end: true, customer_cancellation_reason: 'unused' },
  },
  iam: async (world) => {
    const id = await freshSubscription(world);
    const patch = (body: unknown) =>
      world.call('PATCH', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token, body });
    const canceled = await patch({ cancel_at_period_end: true });
    const revoked = await patch({ revoke: true });
    const refused = await patch({ cancel_at_period_end: false });
    // A metered subscription with usage: each change reads its meter and usage before the write.
    const metered = (await freshMeteredSubscription(world)).id;
    const patchMetered = (body: unknown) =>
      world.call('PATCH', `/v1/subscriptions/${metered}`, { token: world.demo.personal_access_token, body });
    const meteredCanceled = await patchMetered({ cancel_at_period_end: true });
    const meteredRevoked = await patchMetered({ revoke: true });
    return [
      step('cancel at period end', canceled, 200),
      step('revoke', revoked, 200),
      step('change an ended subscription', refused, 403),
      step('cancel a metered subscription with usage (its meters read)', meteredCanceled, 200),
      step('revoke a metered subscription with usage (its meters read)', meteredRevoked, 200),
    ];
  },
  isolation: () => lifecycleRow('PATCH'),
  dynamoWork: [
    {
      key: 'update-subscription',
      label: 'Update Subscription (cancel at period end)',
      status: 200,
      target: 4,
      prepare: async (world, i) => {
        subscriptionsToChange[i] = JSON.parse((await createSubscription(world)).body ?? '{}').id;
      },
      send: (world, i) =>
        world.call('update-subscription', 'PATCH', `/v1/subscriptions/${subscriptionsToChange[i]}`, {
          token: world.demo.personal_access_token,
          body: { cancel_at_period_end: true },
        }),
    },
  ],
});
