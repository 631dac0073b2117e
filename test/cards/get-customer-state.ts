import { randomUUID } from 'node:crypto';
import { createCustomer } from '#scripts/admin/commands.ts';
import { CUSTOMER } from '#test/bench/fixture.ts';
import type { LocalWorld } from '#test/bench/local-table.ts';
import { freshMeteredSubscription, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';
import { seedCustomerMeter } from './get-customer-meter.ts';

/**
 * A customer of the demo organization with one active subscription (the free plan) and one customer
 * meter of 2 events: its state is read in 8 round trips (token, customer, the organization's meters,
 * the customer's subscription segments, its active segment, its customer meters by key and beside
 * them its subscriptions' products, the one customer meter's usage).
 */
export async function stateCustomer(world: LocalWorld): Promise<{ id: string; externalId: string }> {
  const externalId = `state-${randomUUID()}`;
  const customer = await createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `${externalId}@example.com`,
    externalId,
  });
  const subscribed = await world.call('create-subscription', 'POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: customer.id },
  });
  if (subscribed.status !== 201)
    throw new Error(`subscription for the state's customer: ${subscribed.status}`);
  await seedCustomerMeter(world, world.demo.organization_id, customer.id, 2);
  return { id: customer.id, externalId };
}

export default defineCard({
  name: 'get-customer-state',
  sample: {
    label: 'Get Customer State',
    status: 200,
    params: { id: CUSTOMER },
  },
  iam: async (world) => {
    // The demo customer has an active subscription; a customer meter makes every read run.
    await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    const get = (id: string) =>
      world.call('GET', `/v1/customers/${id}/state`, { token: world.demo.personal_access_token });
    return [
      step(
        'a customer with an active subscription and a customer meter',
        await get(world.demo.customer_id),
        200,
      ),
      step(
        'a customer with a metered subscription and usage (its meters read)',
        await freshMeteredSubscription(world).then(() => get(world.demo.customer_id)),
        200,
      ),
      step('an unknown customer', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world, deletedCustomerId }) => ({
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) => world.call('GET', `/v1/customers/${id}/state`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-customer-state',
      label: 'Get Customer State (one active subscription, one customer meter)',
      status: 200,
      target: 8,
      prepare: async (world) => {
        benchCustomer ??= await stateCustomer(world);
      },
      send: (world) =>
        world.call('get-customer-state', 'GET', `/v1/customers/${benchCustomer?.id}/state`, {
          token: world.demo.personal_access_token,
        }),
    },
  ],
});

let benchCustomer: { id: string; externalId: string } | undefined;
