import { CUSTOMER } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-portal-customer',
  sample: {
    label: 'Get Portal Customer (me)',
    status: 200,
  },
  sam: {
    // The session's own customer, as the portal shows it: no organization, no metadata.
    check: (reply, expect) => {
      expect(reply.body).toMatchObject({ id: CUSTOMER, email: 'ada@example.com', oauth_accounts: {} });
      expect(reply.body).not.toHaveProperty('organization_id');
      expect(reply.body).not.toHaveProperty('metadata');
    },
  },
  iam: async (world) => {
    const me = (token: string) => world.call('GET', '/v1/customer-portal/customers/me', { token });
    return [
      step("the session's customer", await me(world.demo.customer_session_token), 200),
      step('an expired session', await me(world.demo.expired_customer_session_token), 401),
    ];
  },
  isolation: { namesNoResource: 'it answers the customer the session itself names' },
  dynamoWork: [
    {
      key: 'get-portal-customer',
      label: 'Get Portal Customer',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('get-portal-customer', 'GET', '/v1/customer-portal/customers/me', {
          token: world.demo.customer_session_token,
        }),
    },
  ],
});
