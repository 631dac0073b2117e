/**
 * Tenant isolation: anything of another organization, an unknown id and a
 * deleted item get answers that cannot be told apart (status, body with the id
 * itself masked, headers), so ids are never confirmed across tenants; and a
 * customer session only ever sees its own customer's wallets.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createCustomerSession,
  createPersonalAccessToken,
  createProduct,
  createUser,
  createWebhookEndpoint,
} from '#scripts/admin/commands.ts';
import { getCustomer } from '#shared/data/catalog.ts';
import { keys } from '#shared/data/table.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { operationCards } from '#test/cards/index.ts';
import { type IsolationFixture, useIsolationFixture } from '../support/isolation-kit.ts';
import { softDelete } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
/** A second organization's PAT with every scope, a user in both organizations, a user in none. */
let bothOrgsPat: string;
let noOrgPat: string;
let deletedProductId: string;
let deletedCustomerId: string;
/** External ids: of a customer deleted through the API, of a customer of the other organization. */
let deletedExternalId: string;
let foreignExternalId: string;
let deletedEndpointId: string;
let otherDeletedEndpointId: string;
const sessions: { customerId: string; token: string }[] = [];

beforeAll(async () => {
  world = await createWorld('isolation');
  const { demo, admin } = world;
  const all = ALL_SCOPES.join(' ');

  const both = await createUser(admin, { email: `both+${randomUUID()}@x.example` });
  await addMember(admin, demo.organization_id, both.id);
  await addMember(admin, demo.other_organization.organization_id, both.id);
  bothOrgsPat = (await createPersonalAccessToken(admin, { userId: both.id, scope: all })).token;
  const nobody = await createUser(admin, { email: `nobody+${randomUUID()}@x.example` });
  noOrgPat = (await createPersonalAccessToken(admin, { userId: nobody.id, scope: all })).token;

  const product = await createProduct(admin, {
    organizationId: demo.organization_id,
    name: 'gone',
    recurringInterval: 'month',
    priceAmount: 0,
    currency: 'usd',
  });
  await softDelete(world.table, keys.product(product.id));
  deletedProductId = product.id;
  deletedExternalId = `gone-${randomUUID()}`;
  const customer = await createCustomer(admin, {
    organizationId: demo.organization_id,
    email: 'gone@x.example',
    externalId: deletedExternalId,
  });
  const deleted = await world.call('DELETE', `/v1/customers/${customer.id}`, {
    token: demo.personal_access_token,
  });
  if (deleted.status !== 204) throw new Error(`Delete Customer answered ${deleted.status}`);
  deletedCustomerId = customer.id;
  foreignExternalId = `theirs-${randomUUID()}`;
  await createCustomer(admin, {
    organizationId: demo.other_organization.organization_id,
    email: 'theirs@x.example',
    externalId: foreignExternalId,
  });
  for (const [organizationId, assign] of [
    [demo.organization_id, (id: string) => (deletedEndpointId = id)],
    [demo.other_organization.organization_id, (id: string) => (otherDeletedEndpointId = id)],
  ] as const) {
    const { endpoint } = await createWebhookEndpoint(admin, {
      organizationId,
      url: 'https://h.example/gone',
    });
    await softDelete(world.table, keys.webhookEndpoint(endpoint.id));
    assign(endpoint.id);
  }

  const otherCustomer = await getCustomer(world.table, demo.other_organization.customer_id);
  if (!otherCustomer) throw new Error('demo data incomplete');
  sessions.push(
    { customerId: demo.customer_id, token: demo.customer_session_token },
    { customerId: demo.second_customer_id, token: demo.second_customer_session_token },
    { customerId: demo.large_customer_id, token: demo.large_customer_session_token },
    {
      customerId: otherCustomer.id,
      token: (await createCustomerSession(admin, { customer: otherCustomer })).token,
    },
  );
});
afterAll(() => world?.drop());
beforeAll(() => useIsolationFixture(fixture()));

/** Status, headers and body, with the ids named in the request replaced by a placeholder. */
function observable(reply: Reply, ids: string[]) {
  let raw = reply.raw ?? '';
  // Ids are accepted in either case and echoed normalised: mask both spellings.
  for (const id of ids.flatMap((id) => [id, id.toLowerCase()])) raw = raw.split(id).join('<id>');
  return { status: reply.status, headers: reply.headers, raw };
}

function expectIndistinguishable(reply: Reply, baseline: Reply, ids: string[], baselineIds: string[]): void {
  expect(observable(reply, ids)).toEqual(observable(baseline, baselineIds));
}

describe('Create Subscription: foreign, unknown and deleted ids answer alike', () => {
  const subscribe = (productId: string, customerId: string, token = world.demo.personal_access_token) =>
    world.call('POST', '/v1/subscriptions/', {
      token,
      body: { product_id: productId, customer_id: customerId },
    });

  it('products: another organization, deleted, unknown (either case)', async () => {
    const unknown = randomUUID();
    const baseline = await subscribe(unknown, world.demo.customer_id);
    expect(baseline.status).toBe(422);
    expect(baseline.body.detail[0].msg).toBe('Product does not exist.');
    const cases: [string, string][] = [
      ['other organization', world.demo.other_organization.free_product_id],
      ['other organization, upper case', world.demo.other_organization.free_product_id.toUpperCase()],
      ['deleted', deletedProductId],
      ['unknown, upper case', randomUUID().toUpperCase()],
    ];
    for (const [label, id] of cases) {
      const reply = await subscribe(id, world.demo.customer_id);
      expect(observable(reply, [id]), label).toEqual(observable(baseline, [unknown]));
    }
  });

  it('customers: another organization, deleted, unknown', async () => {
    const unknown = randomUUID();
    const baseline = await subscribe(world.demo.free_product_id, unknown);
    expect(baseline.body.detail[0].msg).toBe('Customer does not exist.');
    for (const id of [world.demo.other_organization.customer_id, deletedCustomerId, randomUUID()]) {
      expectIndistinguishable(await subscribe(world.demo.free_product_id, id), baseline, [id], [unknown]);
    }
  });

  it("a user of both organizations cannot mix one organization's product with the other's customer", async () => {
    const unknown = randomUUID();
    const baseline = await subscribe(world.demo.free_product_id, unknown, bothOrgsPat);
    const mixed = await subscribe(
      world.demo.free_product_id,
      world.demo.other_organization.customer_id,
      bothOrgsPat,
    );
    expectIndistinguishable(mixed, baseline, [world.demo.other_organization.customer_id], [unknown]);
    // …while each organization's own pair works for that user.
    expect((await subscribe(world.demo.free_product_id, world.demo.customer_id, bothOrgsPat)).status).toBe(
      201,
    );
    const other = world.demo.other_organization;
    expect((await subscribe(other.free_product_id, other.customer_id, bothOrgsPat)).status).toBe(201);
  });

  it("the other organization's token sees our product as unknown; a user in no organization sees nothing", async () => {
    const other = world.demo.other_organization;
    const unknown = randomUUID();
    for (const token of [other.personal_access_token, noOrgPat]) {
      const baseline = await subscribe(unknown, world.demo.customer_id, token);
      const reply = await subscribe(world.demo.free_product_id, world.demo.customer_id, token);
      expectIndistinguishable(reply, baseline, [world.demo.free_product_id], [unknown]);
    }
  });
});

describe('Delete Webhook Endpoint: foreign, unknown and deleted ids answer alike', () => {
  const del = (id: string, token = world.demo.personal_access_token) =>
    world.call('DELETE', `/v1/webhooks/endpoints/${id}`, { token });

  it('for every kind of id and every caller, the same 404, and nothing changes', async () => {
    const other = world.demo.other_organization;
    const callers = [world.demo.personal_access_token, other.personal_access_token, noOrgPat];
    const ours = world.demo.webhook_endpoint_ids[1] as string;
    const foreignTo = new Map([
      [
        world.demo.personal_access_token,
        [other.webhook_endpoint_id, otherDeletedEndpointId, deletedEndpointId],
      ],
      [other.personal_access_token, [ours, deletedEndpointId, otherDeletedEndpointId]],
      [noOrgPat, [ours, other.webhook_endpoint_id]],
    ]);
    for (const token of callers) {
      const unknown = randomUUID();
      const baseline = await del(unknown, token);
      expect(baseline.status).toBe(404);
      expect(baseline.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
      for (const id of [...(foreignTo.get(token) ?? []), randomUUID().toUpperCase()]) {
        expectIndistinguishable(await del(id, token), baseline, [id], [unknown]);
        expectIndistinguishable(await del(id.toUpperCase(), token), baseline, [id.toUpperCase()], [unknown]);
      }
    }
    // The endpoints probed by the other callers are untouched.
    const { Items } = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.webhookEndpoint(ours).PK },
      }),
    );
    expect(Items?.[0]?.deleted_at).toBeNull();
    expect((await del(ours)).status).toBe(204);
  });
});

describe('List Wallets: a session sees its own customer only', () => {
  const walletIdsOf = async (customerId: string) =>
    (
      (
        await world.table.doc.send(
          new QueryCommand({
            TableName: world.table.name,
            KeyConditionExpression: 'PK = :pk AND begins_with(SK, :w)',
            ExpressionAttributeValues: { ':pk': `CUSTOMER#${customerId}`, ':w': 'WALLET#' },
          }),
        )
      ).Items ?? []
    )
      .map((item) => item.id as string)
      .sort();

  it('every page of every session, walked to the end, is exactly its customer’s wallets', async () => {
    for (const { customerId, token } of sessions) {
      const seen: string[] = [];
      for (let page = 1; ; page++) {
        const reply = await world.call('GET', `/v1/customer-portal/wallets/?limit=100&page=${page}`, {
          token,
        });
        expect(reply.status).toBe(200);
        for (const wallet of reply.body.items) expect(wallet.customer_id).toBe(customerId);
        seen.push(...reply.body.items.map((wallet: { id: string }) => wallet.id));
        if (page >= reply.body.pagination.max_page) break;
      }
      expect(seen.sort()).toEqual(await walletIdsOf(customerId));
    }
  });

  it('property: random sessions and queries only ever list the session customer’s wallets', async () => {
    const totals = new Map<string, number>();
    for (const { customerId } of sessions) totals.set(customerId, (await walletIdsOf(customerId)).length);
    const sorting = fc.constantFrom('created_at', '-created_at', 'balance', '-balance');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...sessions),
        fc.integer({ min: 1, max: 15 }),
        fc.integer({ min: 1, max: 120 }),
        fc.array(sorting, { maxLength: 3 }),
        async ({ customerId, token }, page, limit, sorts) => {
          const query = new URLSearchParams({ page: String(page), limit: String(limit) });
          for (const s of sorts) query.append('sorting', s);
          const reply = await world.call('GET', `/v1/customer-portal/wallets/?${query}`, { token });
          expect(reply.status).toBe(200);
          expect(reply.body.pagination.total_count).toBe(totals.get(customerId));
          for (const wallet of reply.body.items) expect(wallet.customer_id).toBe(customerId);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a deleted customer's session is refused like an unknown token", async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `soon-gone+${randomUUID()}@x.example`,
    });
    const { token } = await createCustomerSession(world.admin, { customer });
    await softDelete(world.table, keys.customer(customer.id));
    const unknown = `polar_cst_${'Z'.repeat(48)}`;
    const baseline = await world.call('GET', '/v1/customer-portal/wallets/', { token: unknown });
    const reply = await world.call('GET', '/v1/customer-portal/wallets/', { token });
    expect(baseline.status).toBe(401);
    expectIndistinguishable(reply, baseline, [], []);
  });
});

describe('List Customers: filters naming another tenant find what unknown values find: nothing', () => {
  it('organization_id, e-mail address and external id of another organization', async () => {
    const list = (query: string) =>
      world.call('GET', `/v1/customers/?${query}`, { token: world.demo.personal_access_token });
    const baseline = await list(`organization_id=${randomUUID()}`);
    expect(baseline.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
    for (const query of [
      `organization_id=${world.demo.other_organization.organization_id}`,
      'email=theirs@x.example',
      `email=${encodeURIComponent('nobody@x.example')}`,
      `query=${foreignExternalId}`,
      'query=theirs',
      `query=${deletedExternalId}`,
    ]) {
      expectIndistinguishable(await list(query), baseline, [], []);
    }
    // Its own member sees them.
    const theirs = await world.call('GET', '/v1/customers/?email=theirs@x.example', {
      token: world.demo.other_organization.personal_access_token,
    });
    expect(theirs.body.pagination.total_count).toBe(1);
  });
});

/** The operations' rows, from their cards (test/cards/<operation>.ts, slot `isolation`). */
const cards = await operationCards();

/** What `beforeAll` made, for the cards' rows. */
const fixture = (): IsolationFixture => ({
  world,
  bothOrgsPat,
  noOrgPat,
  deletedProductId,
  deletedCustomerId,
  deletedExternalId,
  foreignExternalId,
  deletedEndpointId,
  otherDeletedEndpointId,
  sessions,
});

describe('the isolation matrix: every operation, foreign and deleted ids answered as unknown ones', () => {
  it.each(cards.map((card) => [card.name, card.isolation] as const))('%s', async (_, entry) => {
    const row = typeof entry === 'function' ? entry(fixture()) : entry;
    if ('namesNoResource' in row) {
      expect(row.namesNoResource.length).toBeGreaterThan(20);
      return;
    }
    const unknown = randomUUID();
    const baseline = await row.send(unknown);
    if (row.refuses) row.refuses(baseline);
    else expect(baseline.status).toBeGreaterThanOrEqual(400);
    const ids = await row.ids();
    expect(ids.length).toBeGreaterThan(0);
    for (const [label, id] of ids) {
      expect(observable(await row.send(id), [id]), label).toEqual(observable(baseline, [unknown]));
    }
  });
});
