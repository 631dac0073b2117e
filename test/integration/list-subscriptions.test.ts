/**
 * List Subscriptions against DynamoDB Local under its deployed policy: every filter and every order
 * judged by an independent model (the subscriptions as Get Subscription answers them, sorted in
 * memory by a comparator written here from the definition of the order), the lists kept in step by
 * Create, Update and Revoke Subscription, tenant safety, round trips.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
} from '#scripts/admin/commands.ts';
import { subscriptionListSources } from '#shared/data/subscriptions.ts';
import type { RecurringInterval } from '#shared/domain/period.ts';
import type { UserPrincipal } from '#shared/domain/principals.ts';
import type { Subscription } from '#shared/generated/api-types.ts';
import { createSubscription } from '#shared/services/create-subscription.ts';
import { changeSubscription } from '#shared/services/update-subscription.ts';
import { documentedReply } from '../support/contract.ts';
import { projectSubscriptionCounts } from '../support/subscription-counts.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;

interface Tenant {
  token: string;
  readOnlyToken: string;
  organizations: [string, string];
  customers: string[];
  products: string[];
  /** Every subscription of the tenant as Get Subscription answers it now. */
  subscriptions: Subscription[];
}
let tenant: Tenant;

const documented = (reply: Reply): Reply => documentedReply('listSubscriptions', reply);
const list = (query: string, token = tenant.token) =>
  world.call('GET', `/v1/subscriptions/${query}`, { token });

/**
 * A user in two fresh organizations, three customers and three products, and subscriptions created
 * at chosen moments (several in the same millisecond), some canceled at period end, some revoked.
 */
async function seedTenant(): Promise<Tenant> {
  const admin = world.admin;
  const [a, b] = await Promise.all([
    createOrganization(admin, { name: 'List A', defaultCurrency: 'eur' }),
    createOrganization(admin, { name: 'List B' }),
  ]);
  const user = await createUser(admin, { email: `lister-${randomUUID()}@example.com` });
  await addMember(admin, a.id, user.id);
  await addMember(admin, b.id, user.id);
  const token = await createPersonalAccessToken(admin, { userId: user.id, scope: 'subscriptions:write' });
  const readOnly = await createPersonalAccessToken(admin, { userId: user.id, scope: 'subscriptions:read' });
  const customer = (organizationId: string, n: number) =>
    createCustomer(admin, { organizationId, email: `c${n}-${randomUUID()}@example.com` });
  const customers = await Promise.all([customer(a.id, 1), customer(a.id, 2), customer(b.id, 3)]);
  const product = (organizationId: string, interval: RecurringInterval, currency: string) =>
    createProduct(admin, {
      organizationId,
      name: `Free ${interval}`,
      recurringInterval: interval,
      priceAmount: 0,
      currency,
    });
  const products = await Promise.all([
    product(a.id, 'month', 'eur'),
    product(a.id, 'year', 'eur'),
    product(b.id, 'day', 'usd'),
  ]);
  const principal: UserPrincipal = {
    kind: 'user',
    userId: user.id,
    tokenId: token.record.token_id,
    organizationIds: [a.id, b.id],
    scopes: new Set(['subscriptions:write']),
  };
  const plan: [customer: number, product: number, minute: number][] = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 1, 3],
    [1, 0, 1],
    [1, 1, 1],
    [1, 1, 7],
    [0, 0, 5],
    [2, 2, 2],
    [2, 2, 2],
    [2, 2, 9],
    [1, 0, 4],
  ];
  const created: string[] = [];
  for (const [c, p, minute] of plan) {
    const at = new Date(Date.UTC(2026, 0, 31, 12, minute));
    const subscription = await createSubscription({ ...world.admin, now: () => at }, principal, {
      customer_id: customers[c]?.id as string,
      product_id: products[p]?.id as string,
    });
    created.push(subscription.id);
  }
  const deps = { ...world.admin, now: () => new Date(Date.UTC(2026, 1, 2)) };
  for (const index of [1, 4, 8]) {
    await changeSubscription(deps, principal, created[index] as string, { kind: 'revoke' });
  }
  for (const index of [2, 9]) {
    await changeSubscription(deps, principal, created[index] as string, {
      kind: 'cancel',
      atPeriodEnd: true,
      reason: 'unused',
    });
  }
  const subscriptions = await Promise.all(
    created.map(
      async (id) => (await world.call('GET', `/v1/subscriptions/${id}`, { token: token.token })).body,
    ),
  );
  return {
    token: token.token,
    readOnlyToken: readOnly.token,
    organizations: [a.id, b.id],
    customers: customers.map((c) => c.id),
    products: products.map((p) => p.id),
    subscriptions,
  };
}

beforeAll(async () => {
  world = await createWorld('list-subscriptions');
  tenant = await seedTenant();
  // The counts as the stream's projection leaves them once caught up (this table has no stream).
  await projectSubscriptionCounts(world.table);
});
afterAll(() => world?.drop());

// --- The model ------------------------------------------------------------------------------

type Field = 'started_at' | 'current_period_end' | 'created_at' | 'status' | 'amount';

function compareField(a: Subscription, b: Subscription, field: Field): number {
  if (field === 'amount') return a.amount - b.amount;
  if (field === 'status') return a.status < b.status ? -1 : a.status > b.status ? 1 : 0;
  return Date.parse(String(a[field])) - Date.parse(String(b[field]));
}

function modelOrder(sorting: readonly string[]) {
  const criteria: { field: Field; descending: boolean }[] = [];
  for (const value of sorting.length > 0 ? sorting : ['-started_at']) {
    const field = value.replace(/^-/, '') as Field;
    if (!criteria.some((c) => c.field === field)) criteria.push({ field, descending: value.startsWith('-') });
  }
  return (a: Subscription, b: Subscription) => {
    for (const { field, descending } of criteria) {
      const diff = compareField(a, b, field);
      if (diff !== 0) return descending ? -diff : diff;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}

const ACTIVE = ['trialing', 'active', 'past_due'];

interface Filters {
  organization_id?: string[];
  customer_id?: string[];
  product_id?: string[];
  active?: boolean;
}

function modelList(filters: Filters, sorting: readonly string[]): Subscription[] {
  return tenant.subscriptions
    .filter(
      (s) =>
        (!filters.organization_id || filters.organization_id.includes(s.customer.organization_id)) &&
        (!filters.customer_id || filters.customer_id.includes(s.customer_id)) &&
        (!filters.product_id || filters.product_id.includes(s.product_id)) &&
        (filters.active === undefined || ACTIVE.includes(s.status) === filters.active),
    )
    .sort(modelOrder(sorting));
}

function queryOf(filters: Filters, sorting: readonly string[], page: number, limit: number): string {
  const params = new URLSearchParams();
  for (const [name, values] of Object.entries(filters)) {
    for (const value of [values].flat()) params.append(name, String(value));
  }
  for (const value of sorting) params.append('sorting', value);
  params.set('page', String(page));
  params.set('limit', String(limit));
  return `?${params}`;
}

// --- Tests ------------------------------------------------------------------------------------

const SORTINGS: string[][] = [
  [],
  ['started_at'],
  ['-started_at'],
  ['current_period_end'],
  ['-current_period_end'],
  ['created_at'],
  ['-created_at'],
  ['status'],
  ['-status'],
  ['amount'],
  ['-amount'],
  ['status', '-current_period_end'],
  ['-status', 'started_at'],
  ['amount', '-status', 'current_period_end'],
  ['-amount', 'created_at'],
  ['-started_at', 'status'],
];

describe('GET /v1/subscriptions/', () => {
  it('every page of every order and every filter is the slice of the model', async () => {
    const [a, b] = tenant.organizations;
    const [c1, c2, c3] = tenant.customers as [string, string, string];
    const [p1, p2, p3] = tenant.products as [string, string, string];
    // Each filter reads one family of lists (the organization's, a customer's, a product's, a
    // customer's of a product, a status segment of any of them); each sorting one field's entries and
    // one merge order. Every sorting meets every family, through the family's filters in turn (80
    // lists; the whole product of the 15 filters and 16 sortings, 240 lists, found nothing more and
    // was the fast tier's longest file but one). The fuzz suite draws the rest at random.
    const families: Filters[][] = [
      [{}, { organization_id: [a] }, { organization_id: [b] }, { organization_id: [a, b] }],
      [{ customer_id: [c1] }, { customer_id: [c1, c3] }, { organization_id: [b], customer_id: [c1] }],
      [{ product_id: [p1] }, { product_id: [p2, p3] }],
      [
        { customer_id: [c2], product_id: [p1, p2] },
        { customer_id: [c1, c2], product_id: [p1] },
      ],
      [
        { active: true },
        { active: false },
        { customer_id: [c1], active: true },
        { product_id: [p3], active: false },
      ],
    ];
    const cases = families.flatMap((family) =>
      SORTINGS.map((sorting, n) => ({ filters: family[n % family.length] as Filters, sorting })),
    );
    for (const [n, { filters, sorting }] of cases.entries()) {
      const expected = modelList(filters, sorting).map((s) => s.id);
      // Pages of 3 cut most tie groups and segment boundaries; every third list is walked by 7s (the
      // walk's cost follows the number of pages: each reads every partition of its family).
      const limit = n % 3 === 2 ? 7 : 3;
      const seen: string[] = [];
      for (let page = 1; page <= Math.ceil(expected.length / limit) + 1; page++) {
        const reply = await list(queryOf(filters, sorting, page, limit));
        expect(reply.status).toBe(200);
        expect(reply.body.pagination).toEqual({
          total_count: expected.length,
          max_page: Math.ceil(expected.length / limit),
        });
        seen.push(...reply.body.items.map((s: Subscription) => s.id));
      }
      expect(seen, `${JSON.stringify(filters)} ${sorting.join(',')}`).toEqual(expected);
    }
  });

  it('answers each subscription as Get Subscription does, the lists in step with every change', async () => {
    const reply = documented(await list(queryOf({}, ['created_at'], 1, 100)));
    const byId = new Map(tenant.subscriptions.map((s) => [s.id, s]));
    for (const item of reply.body.items as Subscription[]) expect(item).toEqual(byId.get(item.id));
    expect(reply.body.items).toHaveLength(tenant.subscriptions.length);
    // The lifecycle states of the seed are all there: live, canceled at period end, ended.
    expect(
      new Set(reply.body.items.map((s: Subscription) => `${s.status}/${s.cancel_at_period_end}`)),
    ).toEqual(new Set(['active/false', 'active/true', 'canceled/false']));
  });

  it('a change through the API moves the subscription between the active and ended lists at once', async () => {
    const [c1] = tenant.customers as [string];
    const [p1] = tenant.products as [string];
    const created = await world.call('POST', '/v1/subscriptions/', {
      token: tenant.token,
      body: { customer_id: c1, product_id: p1 },
    });
    expect(created.status).toBe(201);
    const ids = async (filters: Filters) =>
      (await list(queryOf(filters, [], 1, 100))).body.items.map((s: Subscription) => s.id);
    expect(await ids({ customer_id: [c1], product_id: [p1], active: true })).toContain(created.body.id);
    const canceled = await world.call('PATCH', `/v1/subscriptions/${created.body.id}`, {
      token: tenant.token,
      body: { cancel_at_period_end: true },
    });
    const listed = (await list(queryOf({ customer_id: [c1] }, [], 1, 100))).body.items.find(
      (s: Subscription) => s.id === created.body.id,
    );
    expect(listed).toEqual(canceled.body);
    const revoked = await world.call('DELETE', `/v1/subscriptions/${created.body.id}`, {
      token: tenant.token,
    });
    expect(revoked.status).toBe(200);
    expect(await ids({ active: true })).not.toContain(created.body.id);
    expect(await ids({ product_id: [p1], active: false })).toContain(created.body.id);
    const ended = (await list(queryOf({ active: false }, [], 1, 100))).body.items.find(
      (s: Subscription) => s.id === created.body.id,
    );
    expect(ended).toEqual(revoked.body);
    // Each of the four lists holds one segment count per (status, amount) (its registry item aside)
    // and four entries per subscription (three sort fields and the id order): nothing stale is left
    // by the move.
    // Listed before counted: the counts follow from the stream (projected here as it would).
    await projectSubscriptionCounts(world.table);
    const stored = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: {
          ':pk': `LIST#SUBSCRIPTION-CUSTOMER-PRODUCT#${tenant.organizations[0]}#${c1}#${p1}`,
        },
      }),
    );
    const counts = (stored.Items ?? []).filter(
      (i) => String(i.SK).startsWith('#COUNT#') && i.entry_count !== undefined,
    );
    const entries = (stored.Items ?? []).filter((i) => !String(i.SK).startsWith('#COUNT#'));
    const total = counts.reduce((sum, c) => sum + Number(c.entry_count), 0);
    expect(entries).toHaveLength(4 * total);
    expect(total).toBe(
      tenant.subscriptions.filter((s) => s.customer_id === c1 && s.product_id === p1).length + 1,
    );
    tenant.subscriptions.push(revoked.body);
  });

  it('round trips: auth, the count Query of each of the 17 partitions, one Query per segment read in each, the page’s subscriptions, one batch (neither past the end)', async () => {
    const [, b] = tenant.organizations;
    // Organization B: an active and a canceled segment, in the shards its subscriptions' ids chose.
    const segments = { all: 0, active: 0 };
    for (const source of subscriptionListSources(b)) {
      const stored = await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :count)',
          ExpressionAttributeValues: { ':pk': `LIST#SUBSCRIPTION#${source}`, ':count': '#COUNT#' },
        }),
      );
      const statuses = new Map(
        (stored.Items ?? []).map((i) => [i.segment_key, i.segment_values?.status?.choice as string]),
      );
      segments.all += statuses.size;
      segments.active += [...statuses.values()].filter((status) => status === 'active').length;
    }
    expect(segments.all).toBeGreaterThan(segments.active);
    expect(segments.active).toBeGreaterThan(0);
    world.resetCount();
    const reply = await list(queryOf({ organization_id: [b] }, [], 1, 10));
    expect(reply.body.items.length).toBeGreaterThan(0);
    expect(world.roundTrips()).toBe(1 + 17 + segments.all + 2);
    world.resetCount();
    await list(queryOf({ organization_id: [b], active: true }, [], 1, 10));
    expect(world.roundTrips()).toBe(1 + 17 + segments.active + 2);
    world.resetCount();
    // Past the counts' end the segments are read still: counts kept by the stream may lag the entries.
    const past = await list(queryOf({ organization_id: [b] }, [], 50, 10));
    expect(past.body.items).toEqual([]);
    expect(world.roundTrips()).toBe(1 + 17 + segments.all);
  });

  it('another organization’s ids match nothing: no item, no count, as unknown ids', async () => {
    const other = world.demo.other_organization;
    // A subscription of the other organization exists for its customer and product.
    await world.call('POST', '/v1/subscriptions/', {
      token: other.personal_access_token,
      body: { product_id: other.free_product_id, customer_id: other.customer_id },
    });
    for (const query of [
      `?customer_id=${other.customer_id}`,
      `?product_id=${other.free_product_id}`,
      `?organization_id=${other.organization_id}`,
      `?customer_id=${randomUUID()}`,
    ]) {
      const reply = documented(await list(query));
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
    }
  });

  it('refuses what it cannot serve (422 at the parameter) and needs a subscriptions scope', async () => {
    const cases: [string, string[], string][] = [
      ['?sorting=ended_at', ['query', 'sorting', '0'], 'enum'],
      ['?sorting=-started_at&sorting=customer', ['query', 'sorting', '1'], 'enum'],
      ['?active=maybe', ['query', 'active'], 'bool_parsing'],
      ['?customer_id=42', ['query', 'customer_id', '0'], 'uuid_parsing'],
      [
        `?${Array.from({ length: 11 }, () => `product_id=${randomUUID()}`).join('&')}`,
        ['query', 'product_id'],
        'too_long',
      ],
      ['?page=0', ['query', 'page'], 'greater_than_equal'],
      ['?limit=1.5', ['query', 'limit'], 'int_parsing'],
    ];
    for (const [query, loc, type] of cases) {
      const reply = documented(await list(query));
      expect(reply.status, query).toBe(422);
      expect(reply.body.detail[0], query).toMatchObject({ loc, type });
    }
    // The hosted service's other filters are refused, never ignored: each named.
    const unsupported = documented(
      await list('?external_customer_id=crm-1&started_after=2026-01-01T00:00:00Z&metadata[plan]=pro'),
    );
    expect(unsupported.status).toBe(422);
    expect(unsupported.body.error).toBe('PolarRequestValidationError');
    expect(unsupported.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([
      ['query', 'external_customer_id'],
      ['query', 'started_after'],
      ['query', 'metadata'],
    ]);
    // `true` and `false` only, as every boolean parameter here (docs/conventions.md).
    expect((await list('?active=true')).status).toBe(200);
    for (const word of ['TRUE', '1', 'yes']) expect((await list(`?active=${word}`)).status).toBe(422);
    expect((await list('', tenant.readOnlyToken)).status).toBe(200);
    const refused = await list('', world.demo.personal_access_token_without_scopes);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('insufficient_scope');
    expect((await list('?limit=1000000000000000000000')).body.pagination.max_page).toBe(
      Math.ceil(tenant.subscriptions.length / 100),
    );
  });
});
