import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('get-portal-customer');
});
afterAll(() => world?.drop());

const me = (token = world.demo.customer_session_token, path = '/v1/customer-portal/customers/me') =>
  world.call('GET', path, { token });

describe('Get Portal Customer (customer portal, GET /v1/customer-portal/customers/me)', () => {
  it("200: the session's own customer, as the portal shows it, under both spellings", async () => {
    const full = (
      await world.call('GET', `/v1/customers/${world.demo.customer_id}`, {
        token: world.demo.personal_access_token,
      })
    ).body;
    for (const path of ['/v1/customer-portal/customers/me', '/v1/customer-portal/customers/me/']) {
      const reply = await me(undefined, path);
      expect(reply.status).toBe(200);
      // The hosted service's CustomerPortalCustomer: no metadata, external id or organization.
      expect(reply.body).toEqual({
        id: full.id,
        created_at: full.created_at,
        modified_at: full.modified_at,
        email: full.email,
        email_verified: full.email_verified,
        name: full.name,
        billing_name: full.billing_name,
        billing_address: full.billing_address,
        tax_id: full.tax_id,
        oauth_accounts: {},
        default_payment_method_id: null,
        type: full.type,
        locale: full.locale,
      });
    }
  });

  it("each session sees its own customer, never another's", async () => {
    const second = await me(world.demo.second_customer_session_token);
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(world.demo.second_customer_id);
  });

  it('401 for a personal access token, an expired session, and the session of a customer deleted since', async () => {
    expect((await me(world.demo.personal_access_token)).status).toBe(401);
    expect((await me(world.demo.expired_customer_session_token)).status).toBe(401);
    // The large customer's session: that customer deleted through the API.
    const deleted = await world.call('DELETE', `/v1/customers/${world.demo.large_customer_id}`, {
      token: world.demo.personal_access_token,
    });
    expect(deleted.status).toBe(204);
    const reply = await me(world.demo.large_customer_session_token);
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toMatch(/^Bearer realm="polar"/);
  });

  it('costs two round trips: the token, then the customer', async () => {
    world.resetCount();
    expect((await me()).status).toBe(200);
    expect(world.roundTrips()).toBe(2);
  });
});
