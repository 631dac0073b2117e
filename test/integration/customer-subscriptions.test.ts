/**
 * The customer portal's subscriptions against DynamoDB Local under the functions' deployed policies:
 * a session sees and changes its own customer's subscriptions only, with the portal's transitions
 * (cancel at period end, uncancel); illegal ones change nothing; round trips.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, createCustomerSession } from '#scripts/admin/commands.ts';
import type { CustomerRecord } from '#shared/data/records.ts';
import { keys } from '#shared/data/table.ts';
import { insertCustomerSession } from '#shared/data/tokens.ts';
import { generateSecret, hashSecret, secretPrefixes } from '#shared/domain/secrets.ts';
import type { CustomerSubscription, Subscription } from '#shared/generated/api-types.ts';
import { documentedReply as documented } from '../support/contract.ts';
import { softDelete } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
let customer: CustomerRecord;
let session: string;
/** The customer's subscriptions, oldest first: [0] revoked, the others live. */
let mine: Subscription[];
/** Another customer's subscription in the same organization, and one of another organization. */
let neighbours: Subscription;
let foreign: Subscription;

const PORTAL = '/v1/customer-portal/subscriptions/';
const portal = (method: string, path: string, options: { token?: string; body?: unknown } = {}) =>
  world.call(method, `${PORTAL}${path}`, { token: options.token ?? session, ...options });

async function subscribe(customerId: string, token = world.demo.personal_access_token, productId?: string) {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token,
    body: { product_id: productId ?? world.demo.free_product_id, customer_id: customerId },
  });
  expect(reply.status).toBe(201);
  return reply.body as Subscription;
}

/** The subscription as the organization's Get Subscription sees it. */
const stored = async (id: string) =>
  (await world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token })).body;

beforeAll(async () => {
  world = await createWorld('customer-subscriptions');
  customer = await createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `portal+${randomUUID()}@example.com`,
  });
  session = (await createCustomerSession(world.admin, { customer })).token;
  mine = [];
  for (let i = 0; i < 4; i++) mine.push(await subscribe(customer.id));
  mine[0] = (
    await world.call('DELETE', `/v1/subscriptions/${mine[0]?.id}`, {
      token: world.demo.personal_access_token,
    })
  ).body;
  neighbours = await subscribe(world.demo.second_customer_id);
  const other = world.demo.other_organization;
  foreign = await subscribe(other.customer_id, other.personal_access_token, other.free_product_id);
});
afterAll(() => world?.drop());

describe('GET /v1/customer-portal/subscriptions/', () => {
  it("lists the customer's own subscriptions only, newest first, in 6 round trips", async () => {
    world.resetCount();
    const reply = documented('listCustomerSubscriptions', await portal('GET', ''));
    // Auth, the customer list's counts, its active and canceled segments, the page's subscriptions
    // (slim entries), the batch of their products.
    expect(world.roundTrips()).toBe(6);
    expect(reply.status).toBe(200);
    expect(reply.body.pagination).toEqual({ total_count: 4, max_page: 1 });
    expect(reply.body.items.map((s: CustomerSubscription) => s.id)).toEqual(
      [...mine].reverse().map((s) => s.id),
    );
    const [first] = reply.body.items as CustomerSubscription[];
    expect(first).not.toHaveProperty('customer');
    expect(first).not.toHaveProperty('metadata');
    expect(first?.product).toMatchObject({
      id: world.demo.free_product_id,
      benefits: [],
      organization: { id: world.demo.organization_id, customer_portal_settings: { usage: { show: false } } },
    });
  });

  it('filters by active and product, pages, and sorts (organization orders nothing)', async () => {
    const ids = async (query: string) =>
      (await portal('GET', query)).body.items.map((s: CustomerSubscription) => s.id);
    expect(await ids('?active=false')).toEqual([mine[0]?.id]);
    expect(await ids('?active=true&sorting=started_at')).toEqual(mine.slice(1).map((s) => s.id));
    expect(await ids(`?product_id=${world.demo.paid_product_id}`)).toEqual([]);
    expect(await ids(`?product_id=${world.demo.free_product_id}&sorting=-status&sorting=started_at`)).toEqual(
      [mine[0]?.id, ...mine.slice(1).map((s) => s.id)],
    );
    expect(await ids('?sorting=organization')).toEqual(mine.map((s) => s.id).sort());
    const second = documented('listCustomerSubscriptions', await portal('GET', '?limit=3&page=2'));
    expect(second.body).toMatchObject({ pagination: { total_count: 4, max_page: 2 } });
    expect(second.body.items).toHaveLength(1);
    const refused = documented('listCustomerSubscriptions', await portal('GET', '?sorting=product'));
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0]).toMatchObject({ loc: ['query', 'sorting', '0'], type: 'enum' });
    const search = documented('listCustomerSubscriptions', await portal('GET', '?query=pro'));
    expect(search.status).toBe(422);
    expect(search.body).toMatchObject({
      error: 'PolarRequestValidationError',
      detail: [{ loc: ['query', 'query'], type: 'value_error' }],
    });
  });
});

describe('GET /v1/customer-portal/subscriptions/{id}', () => {
  it('answers its own subscription as the list shows it, in 3 round trips', async () => {
    const listed = (await portal('GET', '?limit=100')).body.items as CustomerSubscription[];
    for (const subscription of mine) {
      world.resetCount();
      const reply = documented('getCustomerSubscription', await portal('GET', subscription.id));
      expect(world.roundTrips()).toBe(3);
      expect(reply.body).toEqual(listed.find((s) => s.id === subscription.id));
    }
  });

  it("another customer's subscription, another organization's, and an unknown id are the same 404", async () => {
    const unknown = await portal('GET', randomUUID());
    expect(unknown.status).toBe(404);
    for (const other of [neighbours, foreign]) {
      const reply = await portal('GET', other.id);
      expect(reply.status).toBe(404);
      expect(reply.raw).toBe(unknown.raw);
    }
  });
});

describe('PATCH and DELETE /v1/customer-portal/subscriptions/{id}', () => {
  it('cancel at period end with a reason and comment, then uncancel; 4 round trips each', async () => {
    const target = mine[1] as Subscription;
    world.resetCount();
    const canceled = documented(
      'updateCustomerSubscription',
      await portal('PATCH', target.id, {
        body: {
          cancel_at_period_end: true,
          cancellation_reason: 'too_expensive',
          cancellation_comment: 'Later.',
        },
      }),
    );
    expect(world.roundTrips()).toBe(4);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
      ends_at: target.current_period_end,
      ended_at: null,
      customer_cancellation_reason: 'too_expensive',
      customer_cancellation_comment: 'Later.',
    });
    expect(await stored(target.id)).toMatchObject({
      cancel_at_period_end: true,
      canceled_at: canceled.body.canceled_at,
    });
    world.resetCount();
    const back = documented(
      'updateCustomerSubscription',
      await portal('PATCH', target.id, { body: { cancel_at_period_end: false } }),
    );
    expect(world.roundTrips()).toBe(4);
    expect(back.body).toMatchObject({
      cancel_at_period_end: false,
      canceled_at: null,
      ends_at: null,
      customer_cancellation_reason: null,
    });
    const listed = (await portal('GET', '?limit=100')).body.items.find(
      (s: CustomerSubscription) => s.id === target.id,
    );
    expect(listed).toEqual(back.body);
  });

  it('DELETE cancels at the end of the period (it does not revoke); a second one is 403', async () => {
    const target = mine[2] as Subscription;
    const reply = documented('cancelCustomerSubscription', await portal('DELETE', target.id));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
      ends_at: target.current_period_end,
    });
    const before = await stored(target.id);
    const again = documented('cancelCustomerSubscription', await portal('DELETE', target.id));
    expect(again.status).toBe(403);
    expect(again.body).toEqual({ error: 'AlreadyCanceledSubscription', detail: expect.any(String) });
    expect(await stored(target.id)).toEqual(before);
  });

  it('illegal transitions are clear 4xx and change nothing', async () => {
    const scheduled = mine[2] as Subscription; // set to cancel by the test above
    const live = mine[3] as Subscription;
    const revoked = mine[0] as Subscription;
    const cases: [string, string, unknown, number, string][] = [
      [
        'cancel one already set to cancel',
        scheduled.id,
        { cancel_at_period_end: true },
        403,
        'AlreadyCanceledSubscription',
      ],
      [
        'uncancel one not set to cancel',
        live.id,
        { cancel_at_period_end: false },
        409,
        'SubscriptionNotScheduledToCancel',
      ],
      [
        'uncancel an ended one',
        revoked.id,
        { cancel_at_period_end: false },
        403,
        'AlreadyCanceledSubscription',
      ],
      ['cancel an ended one', revoked.id, { cancel_at_period_end: true }, 403, 'AlreadyCanceledSubscription'],
    ];
    for (const [what, id, body, status, error] of cases) {
      const before = await stored(id);
      const reply = documented('updateCustomerSubscription', await portal('PATCH', id, { body }));
      expect(reply.status, what).toBe(status);
      expect(reply.body, what).toEqual({ error, detail: expect.any(String) });
      expect(await stored(id), what).toEqual(before);
    }
    const ended = documented('cancelCustomerSubscription', await portal('DELETE', revoked.id));
    expect(ended.status).toBe(403);
  });

  it('refuses bodies that ask for nothing or for what the portal does not offer (422)', async () => {
    const live = mine[3] as Subscription;
    const before = await stored(live.id);
    for (const body of [
      {},
      { cancel_at_period_end: null },
      { product_id: world.demo.free_product_id },
      { seats: 3 },
      { cancel_at_period_end: true, cancellation_reason: 'bored' },
      { cancel_at_period_end: true, cancellation_comment: 'bell\u0007' },
    ]) {
      const reply = documented('updateCustomerSubscription', await portal('PATCH', live.id, { body }));
      expect(reply.status, JSON.stringify(body)).toBe(422);
    }
    expect(await stored(live.id)).toEqual(before);
  });

  it("another customer's and another organization's subscriptions: the 404 of an unknown id, unchanged", async () => {
    for (const method of ['PATCH', 'DELETE']) {
      const body = method === 'PATCH' ? { body: { cancel_at_period_end: true } } : {};
      const unknown = await portal(method, randomUUID(), body);
      for (const other of [neighbours, foreign]) {
        const reply = await portal(method, other.id, body);
        expect(reply.status).toBe(404);
        expect(reply.raw).toBe(unknown.raw);
      }
    }
    expect((await stored(neighbours.id)).cancel_at_period_end).toBe(false);
  });

  it('of concurrent cancels exactly one answers 200, the others 403', async () => {
    const fresh = await subscribe(customer.id);
    const replies = await Promise.all(Array.from({ length: 5 }, () => portal('DELETE', fresh.id)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 403)).toHaveLength(4);
  });
});

describe('credentials', () => {
  it("a deleted customer's session stops working on all four at once (401)", async () => {
    const gone = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `gone+${randomUUID()}@example.com`,
    });
    const token = (await createCustomerSession(world.admin, { customer: gone })).token;
    const subscription = await subscribe(gone.id);
    expect((await portal('GET', '', { token })).status).toBe(200);
    await softDelete(world.table, keys.customer(gone.id));
    for (const [method, path, body] of [
      ['GET', '', undefined],
      ['GET', subscription.id, undefined],
      ['PATCH', subscription.id, { cancel_at_period_end: true }],
      ['DELETE', subscription.id, undefined],
    ] as const) {
      const reply = await portal(method, path, { token, ...(body ? { body } : {}) });
      expect(reply.status, `${method} ${path}`).toBe(401);
      expect(reply.body.error).toBe('invalid_token');
    }
    expect((await stored(subscription.id)).cancel_at_period_end).toBe(false);
  });

  it('a personal access token is refused (401); a read-only session may read but not change (403)', async () => {
    const pat = await portal('GET', '', { token: world.demo.personal_access_token });
    expect(pat.status).toBe(401);
    expect(pat.body).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
    const token = generateSecret(secretPrefixes.customerSession);
    const now = new Date();
    await insertCustomerSession(world.table, hashSecret(token), {
      kind: 'customer_session',
      token_id: randomUUID(),
      customer_id: customer.id,
      organization_id: customer.organization_id,
      scope: 'customer_portal:read',
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 600_000).toISOString(),
      revoked_at: null,
    });
    expect((await portal('GET', (mine[3] as Subscription).id, { token })).status).toBe(200);
    const refused = documented(
      'cancelCustomerSubscription',
      await portal('DELETE', (mine[3] as Subscription).id, { token }),
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('insufficient_scope');
  });
});
