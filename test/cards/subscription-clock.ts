import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'subscription-clock',
  /**
   * The scheduled clock, invoked as its schedule invokes it, a month and a few days ahead: the fresh
   * subscription renews (its current_period_end entries move), the one set to cancel ends (its entries
   * move to the ended segment, both counts change); a metered one of each likewise, each change
   * reading its meter and usage first (the events carry them).
   */
  iam: async (world) => {
    const renewing = await freshSubscription(world);
    const ending = await freshSubscription(world);
    const meteredRenewing = (await freshMeteredSubscription(world)).id;
    const meteredEnding = (await freshMeteredSubscription(world)).id;
    const token = world.demo.personal_access_token;
    const canceled = await world.call('PATCH', `/v1/subscriptions/${ending}`, {
      token,
      body: { cancel_at_period_end: true },
    });
    const meteredCanceled = await world.call('PATCH', `/v1/subscriptions/${meteredEnding}`, {
      token,
      body: { cancel_at_period_end: true },
    });
    const { createHandler } = await import('#functions/subscription-clock/handler.ts');
    const clock = createHandler({
      ...world.depsFor('subscription-clock'),
      now: () => new Date(Date.now() + 35 * 86_400_000),
    });
    const ran = await clock({}).then(
      () => 'ran',
      () => 'failed',
    );
    const read = async (id: string) => (await world.call('GET', `/v1/subscriptions/${id}`, { token })).body;
    const [renewed, ended, meteredRenewed, meteredEnded] = await Promise.all(
      [renewing, ending, meteredRenewing, meteredEnding].map(read),
    );
    return [
      step('cancel one at period end', canceled, 200),
      step('cancel a metered one at period end', meteredCanceled, 200),
      { what: 'a run of the clock', got: ran, expected: 'ran' },
      { what: 'the live one renewed', got: String(renewed.modified_at !== null), expected: 'true' },
      { what: 'the canceled one ended', got: ended.status, expected: 'canceled' },
      {
        what: 'the live metered one renewed (its meters read)',
        got: String(meteredRenewed.current_period_start !== meteredRenewed.started_at),
        expected: 'true',
      },
      {
        what: 'the canceled metered one ended (its meters read)',
        got: meteredEnded.status,
        expected: 'canceled',
      },
    ];
  },
});
