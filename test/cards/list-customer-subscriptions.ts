import { freshMeteredSubscription, freshSubscription, step } from '#test/support/iam-kit.ts';
import { emptyPage, othersSubscriptions, subscriberlessSession } from '#test/support/isolation-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'list-customer-subscriptions',
  sample: {
    label: 'List Customer Subscriptions (portal, empty page)',
    status: 200,
  },
  iam: async (world) => {
    await freshSubscription(world);
    const metered = await freshMeteredSubscription(world);
    const list = (query: string) =>
      world.call('GET', `/v1/customer-portal/subscriptions/${query}`, {
        token: world.demo.customer_session_token,
      });
    return [
      step("the customer's list", await list('?sorting=-status'), 200),
      step(
        "the customer's list of one product",
        await list(`?product_id=${world.demo.free_product_id}`),
        200,
      ),
      step(
        "the customer's list of a metered product, its usage",
        await list(`?product_id=${metered.productId}`),
        200,
      ),
    ];
  },
  isolation: ({ world }) => ({
    refuses: emptyPage,
    ids: async () => {
      // Products with subscriptions of other customers, in this organization and in another.
      await othersSubscriptions();
      return [
        ['product of the organization, subscribed by another customer', world.demo.free_product_id],
        ['product of another organization', world.demo.other_organization.free_product_id],
      ];
    },
    send: async (id) =>
      world.call('GET', `/v1/customer-portal/subscriptions/?product_id=${id}`, {
        token: await subscriberlessSession(),
      }),
  }),
  dynamoWork: [
    {
      key: 'list-customer-subscriptions',
      label: "List Customer Subscriptions (the session customer's, page 1)",
      status: 200,
      // Auth, the customer list's counts, its active segment, the page's subscriptions (slim entries),
      // the customer, organization and product.
      target: 5,
      send: (world) =>
        world.call('list-customer-subscriptions', 'GET', '/v1/customer-portal/subscriptions/?active=true', {
          token: world.demo.customer_session_token,
        }),
    },
  ],
});
