import { DEMO_CUSTOMER_EXTERNAL_ID } from '#scripts/local/seed.ts';
import { CUSTOMER } from '#test/bench/fixture.ts';
import { key, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'create-customer-session',
  sam: {
    // The fixture customer's session, whose portal URL carries its token in the fragment.
    check: (reply, expect) => {
      const session = reply.body as { token: string; customer_id: string; customer_portal_url: string };
      expect(session.customer_id).toBe(CUSTOMER);
      const portal = new URL(session.customer_portal_url);
      expect(new URLSearchParams(portal.hash.slice(1)).get('customer_session_token')).toBe(session.token);
    },
  },
  sample: {
    label: 'Create Customer Session',
    status: 201,
    body: { customer_id: CUSTOMER },
  },
  iam: async (world) => {
    const open = (key: string, body: object) =>
      world.call('POST', '/v1/customer-sessions/', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': key },
        body,
      });
    const byId = await open(key('id'), { customer_id: world.demo.customer_id });
    const replayed = await open(key('id'), { customer_id: world.demo.customer_id });
    const byExternalId = await open(key('external'), { external_customer_id: DEMO_CUSTOMER_EXTERNAL_ID });
    const refused = await open(key('unknown'), { external_customer_id: 'no-such-customer' });
    const retried = await open(key('unknown'), { external_customer_id: 'no-such-customer' });
    return [
      step('by customer id', byId, 201),
      step('replay with the same key', replayed, 201, { reply: byId, field: 'id' }),
      step('by external id', byExternalId, 201),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  isolation: ({ world, deletedCustomerId }) => ({
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call('POST', '/v1/customer-sessions/', {
        token: world.demo.personal_access_token,
        body: { customer_id: id },
      }),
  }),
  dynamoWork: [
    {
      key: 'create-customer-session',
      label: 'Create Customer Session (by id)',
      status: 201,
      target: 3,
      send: (world) =>
        world.call('create-customer-session', 'POST', '/v1/customer-sessions/', {
          token: world.demo.personal_access_token,
          body: { customer_id: world.demo.customer_id },
        }),
    },
  ],
});
