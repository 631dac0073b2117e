/**
 * The API accepts OAuth access tokens wherever it accepts a personal access token: by their scopes,
 * for their subject (the user in their organizations, or one organization), at the same number of
 * round trips; revoked, expired and deleted clients' tokens are refused at once.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
  createWebhookEndpoint,
} from '#scripts/admin/commands.ts';
import { forgetListMarkers } from '#shared/data/list-markers.ts';
import { keys } from '#shared/data/table.ts';
import { usageEventId } from '#shared/data/usage-events.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { operations } from '#shared/operations.ts';
import { seedCustomerMeter } from '../cards/get-customer-meter.ts';
import {
  clientRequest,
  expireItem,
  issueTokens,
  type RegisteredClient,
  registerClient,
  tokenRequest,
} from '../support/oauth.ts';
import { sharedSegmentsRegistered } from '../support/subscription-counts.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
let client: RegisteredClient;
/** Every scope the operations below need, acting for the demo organization. */
let access: string;
/** Only `openid`. */
let narrow: string;

const SCOPES =
  'openid email profile products:read products:write subscriptions:read subscriptions:write customers:read customers:write webhooks:write customer_sessions:write meters:read meters:write events:read events:write customer_meters:read';

beforeAll(async () => {
  world = await createWorld('oauth-access');
  // A tenant that has signed up before: no first-of-its-shard registry put in the round trips counted.
  await sharedSegmentsRegistered(world.table, world.demo);
  client = await registerClient(world.call, world.demo.personal_access_token, { scope: SCOPES });
  access = (await issueTokens(world.call, world.demo.personal_access_token, client, { scope: SCOPES }))
    .access_token;
  narrow = (await issueTokens(world.call, world.demo.personal_access_token, client, { scope: 'openid' }))
    .access_token;
});
afterAll(() => world?.drop());

interface Case {
  /** A request the demo PAT gets a success for; called once per credential. */
  send(token: string): Promise<Reply>;
  success: number;
  /** No scope required: a token with none of the operation's scopes still passes. */
  unscoped?: true;
  /**
   * Run once before the two are compared: the state after which both credentials' requests make the
   * same calls (a first revoke into a segment also registers it in the shared lists: two PutItems).
   */
  settle?(): Promise<void>;
}

const subscriptionOfDemo = async () => {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
  });
  return reply.body.id as string;
};

/** A meter of the demo organization, made once with the PAT. */
let demoMeter: Promise<string> | undefined;
const meterOfDemo = () =>
  (demoMeter ??= world
    .call('POST', '/v1/meters/', {
      token: world.demo.personal_access_token,
      body: {
        name: 'OAuth meter',
        filter: { conjunction: 'and', clauses: [] },
        aggregation: { func: 'count' },
      },
    })
    .then((reply) => reply.body.id as string));

/** A customer meter of the demo customer, folded by the aggregator once (operator access). */
let demoCustomerMeter: Promise<string> | undefined;
const customerMeterOfDemo = () =>
  (demoCustomerMeter ??= seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id));

/** Every operation that takes a personal access token, with a request that succeeds. */
// Create Client is not among them: it takes the user's own personal access token only
// (test/integration/create-client.test.ts), like Authorize and Consent.
let ingested = 0;
const cases: Record<string, Case> = {
  'create-subscription': {
    send: (token) =>
      world.call('POST', '/v1/subscriptions/', {
        token,
        body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
      }),
    success: 201,
  },
  'delete-webhook-endpoint': {
    send: async (token) => {
      const { endpoint } = await createWebhookEndpoint(world.admin, {
        organizationId: world.demo.organization_id,
        url: 'https://hooks.example/oauth',
      });
      return world.call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token });
    },
    success: 204,
  },
  'create-customer-session': {
    send: (token) =>
      world.call('POST', '/v1/customer-sessions/', { token, body: { customer_id: world.demo.customer_id } }),
    success: 201,
  },
  'get-product': {
    send: (token) => world.call('GET', `/v1/products/${world.demo.free_product_id}`, { token }),
    success: 200,
  },
  'get-subscription': {
    send: (token) => world.call('GET', `/v1/subscriptions/${world.demo.subscription_id}`, { token }),
    success: 200,
  },
  'list-subscriptions': {
    send: (token) =>
      world.call('GET', `/v1/subscriptions/?customer_id=${world.demo.customer_id}&limit=5`, { token }),
    success: 200,
  },
  'update-subscription': {
    send: async (token) =>
      world.call('PATCH', `/v1/subscriptions/${await subscriptionOfDemo()}`, {
        token,
        body: { cancel_at_period_end: true },
      }),
    success: 200,
  },
  'revoke-subscription': {
    send: async (token) => world.call('DELETE', `/v1/subscriptions/${await subscriptionOfDemo()}`, { token }),
    success: 200,
    // The canceled segment of the organization's and the free product's lists registered.
    settle: async () => {
      const id = await subscriptionOfDemo();
      const revoked = await world.call('DELETE', `/v1/subscriptions/${id}`, {
        token: world.demo.personal_access_token,
      });
      expect(revoked.status).toBe(200);
    },
  },
  'create-customer': {
    send: (token) =>
      world.call('POST', '/v1/customers/', { token, body: { email: `oauth-${randomUUID()}@example.com` } }),
    success: 201,
  },
  'get-customer': {
    send: (token) => world.call('GET', `/v1/customers/${world.demo.customer_id}`, { token }),
    success: 200,
  },
  userinfo: {
    send: (token) => world.call('GET', '/v1/oauth2/userinfo', { token }),
    success: 200,
    unscoped: true,
  },
  'list-customers': {
    send: (token) => world.call('GET', '/v1/customers/?limit=2', { token }),
    success: 200,
  },
  'ingest-events': {
    send: (token) =>
      world.call('POST', '/v1/events/ingest', {
        token,
        // A new event each time (a duplicate makes fewer calls: no name to count).
        body: {
          events: [
            { name: 'oauth', customer_id: world.demo.customer_id, external_id: `oauth-${++ingested}` },
          ],
        },
      }),
    success: 200,
  },
  'list-events': {
    send: (token) => world.call('GET', '/v1/events/?limit=2', { token }),
    success: 200,
  },
  'get-event': {
    send: (token) =>
      world.call('GET', `/v1/events/${usageEventId(world.demo.organization_id, 'oauth-1')}`, { token }),
    success: 200,
  },
  'list-event-names': {
    send: (token) => world.call('GET', '/v1/events/names', { token }),
    success: 200,
  },
  'get-customer-external': {
    send: (token) =>
      world.call('GET', `/v1/customers/external/${world.demo.customer_external_id}`, { token }),
    success: 200,
  },
  'get-customer-state': {
    send: (token) => world.call('GET', `/v1/customers/${world.demo.customer_id}/state`, { token }),
    success: 200,
  },
  'get-customer-state-external': {
    send: (token) =>
      world.call('GET', `/v1/customers/external/${world.demo.customer_external_id}/state`, { token }),
    success: 200,
  },
  'update-customer': {
    send: (token) =>
      world.call('PATCH', `/v1/customers/${world.demo.customer_id}`, { token, body: { name: 'Ada' } }),
    success: 200,
  },
  'update-customer-external': {
    send: (token) =>
      world.call('PATCH', `/v1/customers/external/${world.demo.customer_external_id}`, {
        token,
        body: { name: 'Ada' },
      }),
    success: 200,
  },
  'delete-customer': {
    send: async (token) => world.call('DELETE', `/v1/customers/${(await freshCustomer()).id}`, { token }),
    success: 204,
  },
  'delete-customer-external': {
    send: async (token) =>
      world.call('DELETE', `/v1/customers/external/${(await freshCustomer()).external_id}`, { token }),
    success: 204,
  },
  'create-product': {
    send: (token) =>
      world.call('POST', '/v1/products/', {
        token,
        body: {
          name: `OAuth plan ${randomUUID()}`,
          recurring_interval: 'month',
          prices: [{ amount_type: 'fixed', price_amount: 0 }],
        },
      }),
    success: 201,
  },
  'list-products': {
    send: (token) => world.call('GET', '/v1/products/?limit=2', { token }),
    success: 200,
  },
  'update-product': {
    send: (token) =>
      world.call('PATCH', `/v1/products/${world.demo.free_product_id}`, {
        token,
        body: { description: `Changed ${randomUUID()}` },
      }),
    success: 200,
  },
  'create-webhook-endpoint': {
    send: (token) =>
      world.call('POST', '/v1/webhooks/endpoints', {
        token,
        body: { url: 'https://hooks.example.com/oauth', format: 'raw', events: ['customer.created'] },
      }),
    success: 201,
  },
  'list-webhook-endpoints': {
    send: (token) => world.call('GET', '/v1/webhooks/endpoints?limit=2', { token }),
    success: 200,
  },
  'get-webhook-endpoint': {
    send: (token) =>
      world.call('GET', `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}`, { token }),
    success: 200,
  },
  'update-webhook-endpoint': {
    send: (token) =>
      world.call('PATCH', `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}`, {
        token,
        body: { name: `Changed ${randomUUID()}` },
      }),
    success: 200,
  },
  'reset-webhook-endpoint-secret': {
    send: (token) =>
      world.call('PATCH', `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}/secret`, { token }),
    success: 200,
  },
  'create-meter': {
    send: (token) =>
      world.call('POST', '/v1/meters/', {
        token,
        body: {
          name: 'OAuth meter',
          filter: { conjunction: 'and', clauses: [] },
          aggregation: { func: 'count' },
        },
      }),
    success: 201,
  },
  'list-meters': {
    send: (token) => world.call('GET', '/v1/meters/?limit=2', { token }),
    success: 200,
  },
  'get-meter': {
    send: async (token) => world.call('GET', `/v1/meters/${await meterOfDemo()}`, { token }),
    settle: async () => void (await meterOfDemo()),
    success: 200,
  },
  'update-meter': {
    send: async (token) =>
      world.call('PATCH', `/v1/meters/${await meterOfDemo()}`, {
        token,
        body: { name: `Changed ${randomUUID()}` },
      }),
    settle: async () => void (await meterOfDemo()),
    success: 200,
  },
  'get-meter-quantities': {
    send: async (token) =>
      world.call(
        'GET',
        `/v1/meters/${await meterOfDemo()}/quantities?start_timestamp=2025-06-01T00:00:00Z&end_timestamp=2025-06-02T00:00:00Z&interval=day&customer_id=${world.demo.customer_id}`,
        { token },
      ),
    settle: async () => void (await meterOfDemo()),
    success: 200,
  },
  'list-customer-meters': {
    send: (token) =>
      world.call('GET', `/v1/customer-meters/?customer_id=${world.demo.customer_id}`, { token }),
    success: 200,
  },
  'get-customer-meter': {
    send: async (token) => world.call('GET', `/v1/customer-meters/${await customerMeterOfDemo()}`, { token }),
    settle: async () => void (await customerMeterOfDemo()),
    success: 200,
  },
  'list-webhook-deliveries': {
    send: (token) => world.call('GET', '/v1/webhooks/deliveries?limit=2', { token }),
    success: 200,
  },
  'redeliver-webhook-event': {
    send: (token) =>
      world.call('POST', `/v1/webhooks/events/${world.demo.webhook_event_id}/redeliver`, { token }),
    success: 202,
  },
};

/** A customer of the demo organization, with an external id, made with the PAT. */
async function freshCustomer(): Promise<{ id: string; external_id: string }> {
  const reply = await world.call('POST', '/v1/customers/', {
    token: world.demo.personal_access_token,
    body: { email: `gone-${randomUUID()}@example.com`, external_id: `gone-${randomUUID()}` },
  });
  expect(reply.status).toBe(201);
  return reply.body;
}

/** The operations whose grants include the OAuth authentication batch (token + client liveness). */
const acceptingOAuth = operations
  .filter((operation) =>
    (operation.access as readonly { actions: readonly string[]; leadingKeys: readonly string[] }[]).some(
      (grant) =>
        grant.actions.includes('dynamodb:BatchGetItem') && grant.leadingKeys.includes('oauthClientLive'),
    ),
  )
  .map((operation) => operation.name);

describe('every operation that takes a personal access token takes an OAuth access token', () => {
  it('the cases below are exactly the operations granted the OAuth authentication read', () => {
    expect(Object.keys(cases).sort()).toEqual([...acceptingOAuth].sort());
  });

  it.each(Object.entries(cases))(
    '%s: the same answer as with the PAT, at the same round trips',
    async (_, c) => {
      await c.settle?.();
      // Both from a cold container: a list learns its organization's list markers once per
      // container (shared/data/list-markers.ts), so the second send would skip that batch.
      forgetListMarkers(world.table, [world.demo.organization_id]);
      world.resetCount();
      const withPat = await c.send(world.demo.personal_access_token);
      const patTrips = world.roundTrips();
      forgetListMarkers(world.table, [world.demo.organization_id]);
      world.resetCount();
      const withOAuth = await c.send(access);
      const oauthTrips = world.roundTrips();
      expect(withPat.status).toBe(c.success);
      expect(withOAuth.status, JSON.stringify(withOAuth.body)).toBe(c.success);
      expect(oauthTrips).toBe(patTrips);
    },
  );

  it.each(Object.entries(cases))('%s: by its scopes (a token with only openid)', async (_, c) => {
    const reply = await c.send(narrow);
    if (c.unscoped) {
      expect(reply.status).toBe(c.success);
    } else {
      expect(reply.status).toBe(403);
      expect(reply.body.error).toBe('insufficient_scope');
    }
  });
});

describe('refused at once: revoked, expired, a deleted client’s, a refresh token, garbage', () => {
  const getProduct = (token: string) =>
    world.call('GET', `/v1/products/${world.demo.free_product_id}`, { token });

  function expectInvalidToken(reply: Reply): void {
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="polar", error="invalid_token"');
  }

  it('revoked by the client (RFC 7009), or ended by a refresh that replaced it', async () => {
    const revoked = await issueTokens(world.call, world.demo.personal_access_token, client, {
      scope: SCOPES,
    });
    expect((await getProduct(revoked.access_token)).status).toBe(200);
    const revocation = await world.call(
      'POST',
      '/v1/oauth2/revoke',
      clientRequest(client, { token: revoked.access_token }),
    );
    expect(revocation.status).toBe(200);
    expectInvalidToken(await getProduct(revoked.access_token));
    const replaced = await issueTokens(world.call, world.demo.personal_access_token, client, {
      scope: SCOPES,
    });
    const refreshed = await tokenRequest(world.call, client, {
      grant_type: 'refresh_token',
      refresh_token: replaced.refresh_token as string,
    });
    expect((await getProduct(refreshed.body.access_token)).status).toBe(200);
    expectInvalidToken(await getProduct(replaced.access_token));
  });

  it('expired', async () => {
    const tokens = await issueTokens(world.call, world.demo.personal_access_token, client, { scope: SCOPES });
    expect((await getProduct(tokens.access_token)).status).toBe(200);
    await expireItem(world.table, keys.token(hashSecret(tokens.access_token)));
    expectInvalidToken(await getProduct(tokens.access_token));
  });

  it('a deleted client: every token it holds stops on the next request, other clients’ do not', async () => {
    const doomed = await registerClient(world.call, world.demo.personal_access_token, { scope: SCOPES });
    const first = await issueTokens(world.call, world.demo.personal_access_token, doomed, { scope: SCOPES });
    const second = await issueTokens(world.call, world.demo.personal_access_token, doomed, { scope: SCOPES });
    expect((await getProduct(first.access_token)).status).toBe(200);
    const removed = await world.call('DELETE', `/v1/oauth2/register/${doomed.client_id}`, {
      token: doomed.registration_access_token,
    });
    expect(removed.status).toBe(204);
    for (const token of [first.access_token, second.access_token])
      expectInvalidToken(await getProduct(token));
    expect((await getProduct(access)).status).toBe(200);
  });

  it('a token whose client or user part was changed, a refresh token, a token of no client: invalid_token', async () => {
    const other = await registerClient(world.call, world.demo.personal_access_token);
    const clientPart = (id: string) => `_${id.slice('polar_ci_'.length)}_`;
    const swapped = access.replace(clientPart(client.client_id), clientPart(other.client_id));
    expect(swapped).not.toBe(access);
    // The user part names another user (the one the token names is the consenting user's id).
    const otherUser = access.replace(/_[0-9a-f-]{36}$/, `_${randomUUID()}`);
    expect(otherUser).not.toBe(access);
    const { refresh_token } = await issueTokens(world.call, world.demo.personal_access_token, client);
    for (const token of [
      swapped,
      otherUser,
      `polar_at_o_${'A'.repeat(48)}`,
      `polar_at_u_${'A'.repeat(48)}_x`,
    ]) {
      expectInvalidToken(await getProduct(token));
    }
    expect((await getProduct(refresh_token as string)).status).toBe(401);
  });

  it('the user’s consent takes a personal access token only: an OAuth token there is the wrong kind', async () => {
    for (const reply of [
      await world.call('GET', `/v1/oauth2/authorize?client_id=${client.client_id}`, { token: access }),
      await world.call('POST', '/v1/oauth2/consent', { token: access, body: { action: 'allow' } }),
    ]) {
      expect(reply.status).toBe(401);
      expect(reply.body).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
    }
  });

  it('customer-portal and registration operations refuse it as the wrong kind', async () => {
    expect((await world.call('GET', '/v1/customer-portal/wallets/', { token: access })).status).toBe(401);
    const registration = await world.call('GET', `/v1/oauth2/register/${client.client_id}`, {
      token: access,
    });
    expect(registration.body).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
  });
});

describe('for its subject', () => {
  let both: string;
  let secondOrganization: string;
  let secondProduct: string;
  beforeAll(async () => {
    const user = await createUser(world.admin, { email: `subjects+${randomUUID()}@x.example` });
    const second = await createOrganization(world.admin, { name: 'Second' });
    secondOrganization = second.id;
    await addMember(world.admin, world.demo.organization_id, user.id);
    await addMember(world.admin, second.id, user.id);
    both = (await createPersonalAccessToken(world.admin, { userId: user.id, scope: ALL_SCOPES.join(' ') }))
      .token;
    secondProduct = (
      await createProduct(world.admin, {
        organizationId: second.id,
        name: 'Second org plan',
        recurringInterval: 'month',
        priceAmount: 0,
        currency: 'usd',
      })
    ).id;
  });
  const product = (id: string, token: string) => world.call('GET', `/v1/products/${id}`, { token });

  it('an organization’s token reaches that organization only, though its user is in two', async () => {
    const { access_token } = await issueTokens(world.call, both, client, {
      scope: SCOPES,
      organization_id: secondOrganization,
    });
    expect(access_token).toMatch(/^polar_at_o_/);
    expect((await product(secondProduct, access_token)).status).toBe(200);
    const ours = await product(world.demo.free_product_id, access_token);
    expect(ours.status).toBe(404);
    expect(ours.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    // UserInfo names the organization (its name with the profile scope).
    const info = await world.call('GET', '/v1/oauth2/userinfo', { token: access_token });
    expect(info.body).toEqual({ sub: secondOrganization, name: 'Second' });
  });

  it('a user’s token reaches every organization of the user; UserInfo names the user', async () => {
    const users = await registerClient(world.call, both, { scope: SCOPES, default_sub_type: 'user' });
    const { access_token } = await issueTokens(world.call, both, users, { scope: SCOPES });
    expect(access_token).toMatch(/^polar_at_u_/);
    expect((await product(secondProduct, access_token)).status).toBe(200);
    expect((await product(world.demo.free_product_id, access_token)).status).toBe(200);
    const info = await world.call('GET', '/v1/oauth2/userinfo', { token: access_token });
    expect(info.body).toEqual({
      sub: expect.any(String),
      email: expect.stringContaining('subjects+'),
      email_verified: false,
    });
  });
});
