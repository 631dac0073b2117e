import { SORTING_VALUES } from '#shared/data/wallet-order.ts';
import { type Step, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-wallets',
  sam: {
    // The fixture customer's 14 wallets, a page of 10, newest first (the default order).
    check: (reply, expect) => {
      const body = reply.body as { items: { created_at: string }[]; pagination: unknown };
      expect(body.pagination).toEqual({ total_count: 14, max_page: 2 });
      const created = body.items.map((wallet) => wallet.created_at);
      expect(created).toHaveLength(10);
      expect(created).toEqual([...created].sort().reverse());
    },
  },
  sample: {
    label: 'List Wallets',
    status: 200,
    query: 'limit=10',
  },
  iam: async (world) => {
    // Every order the parameter can ask for, one and two criteria: each is served by its own index.
    const orders = SORTING_VALUES.flatMap((first) => [
      [first],
      ...SORTING_VALUES.filter((second) => second.replace('-', '') !== first.replace('-', '')).map(
        (second) => [first, second],
      ),
    ]);
    const steps: Step[] = [];
    for (const order of orders) {
      const query = order.map((value) => `sorting=${encodeURIComponent(value)}`).join('&');
      const reply = await world.call('GET', `/v1/customer-portal/wallets/?${query}`, {
        token: world.demo.customer_session_token,
      });
      steps.push(step(`sorting=${order.join(',')}`, reply, 200));
    }
    return steps;
  },
  isolation: { namesNoResource: 'the session itself names the customer (covered above)' },
  dynamoWork: [
    {
      key: 'list-wallets',
      label: 'List Wallets (14 wallets, page 1)',
      status: 200,
      target: 3,
      send: (world) =>
        world.call('list-wallets', 'GET', '/v1/customer-portal/wallets/?limit=10', {
          token: world.demo.customer_session_token,
        }),
    },
  ],
});
