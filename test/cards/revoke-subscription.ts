import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { createSubscription, subscriptionsToChange } from '#test/bench/work-kit.ts';
import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
import { lifecycleRow } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'revoke-subscription',
  sample: {
    label: 'Revoke Subscription (unknown id, 404)',
    status: 404,
    params: { id: UNKNOWN_ID },
  },
  iam: async (world) => {
    const id = await freshSubscription(world);
    const revoke = (which: string) =>
      world.call('DELETE', `/v1/subscriptions/${which}`, { token: world.demo.personal_access_token });
    const first = await revoke(id);
    const second = await revoke(id);
    const metered = await revoke((await freshMeteredSubscription(world)).id);
    return [
      step('revoke', first, 200),
      step('revoke again', second, 403),
      step('revoke a metered subscription with usage (its meters read)', metered, 200),
    ];
  },
  isolation: () => lifecycleRow('DELETE'),
  dynamoWork: [
    {
      key: 'revoke-subscription',
      label: 'Revoke Subscription',
      status: 200,
      target: 4,
      prepare: async (world, i) => {
        subscriptionsToChange[i] = JSON.parse((await createSubscription(world)).body ?? '{}').id;
      },
      send: (world, i) =>
        world.call('revoke-subscription', 'DELETE', `/v1/subscriptions/${subscriptionsToChange[i]}`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});
