import { expect } from 'vitest';
import { UNKNOWN_ID } from '#test/bench/fixture.ts';
import { freshMeteredSubscription, step } from '#test/support/iam-kit.ts';
import { emptyPage } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-subscriptions',
  sample: {
    label: 'List Subscriptions (unknown customer, empty page)',
    status: 200,
    query: `customer_id=${UNKNOWN_ID}`,
  },
  iam: async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/subscriptions/${query}`, { token: world.demo.personal_access_token });
    const { large_customer_id: customer, free_product_id: product } = world.demo;
    const metered = await freshMeteredSubscription(world);
    return [
      step(
        'a list of a subscription with a metered price and usage',
        await list(`?customer_id=${world.demo.customer_id}&product_id=${metered.productId}`),
        200,
      ),
      step("the organization's list", await list('?sorting=status&sorting=-current_period_end'), 200),
      step("a customer's list", await list(`?customer_id=${customer}&active=true`), 200),
      step("a product's list", await list(`?product_id=${product}&sorting=amount`), 200),
      step('a customer and product list', await list(`?customer_id=${customer}&product_id=${product}`), 200),
    ];
  },
  isolation: ({ world }) => ({
    refuses: emptyPage,
    ids: async () => {
      // The other organization's customer and product have subscriptions its own members see.
      const other = world.demo.other_organization;
      await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      const theirs = await world.call('GET', `/v1/subscriptions/?customer_id=${other.customer_id}`, {
        token: other.personal_access_token,
      });
      expect(theirs.body.pagination.total_count).toBeGreaterThan(0);
      return [
        ['customer of another organization', `customer_id=${other.customer_id}`],
        ['product of another organization', `product_id=${other.free_product_id}`],
        ['another organization', `organization_id=${other.organization_id}`],
      ];
    },
    send: (filter) =>
      world.call('GET', `/v1/subscriptions/?${filter.includes('=') ? filter : `customer_id=${filter}`}`, {
        token: world.demo.personal_access_token,
      }),
  }),
  dynamoWork: [
    {
      key: 'list-subscriptions',
      label: "List Subscriptions (a customer's, page 1)",
      status: 200,
      // Auth, the customer list's segment counts, its active segment, the page's subscriptions (slim
      // entries), the embedded customer and product.
      target: 5,
      send: (world) =>
        world.call(
          'list-subscriptions',
          'GET',
          `/v1/subscriptions/?customer_id=${world.demo.large_customer_id}`,
          {
            token: world.demo.personal_access_token,
          },
        ),
    },
  ],
});
