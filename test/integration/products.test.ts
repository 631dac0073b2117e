/**
 * Create, List and Update Product against DynamoDB Local under the functions' deployed policies: the
 * catalogue rules, the list entries kept in step with every write (checked item by item), filters
 * served by their views, tenant safety, the round trips of each operation, and what subscriptions see
 * of a product that changes under them.
 */
import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { DEMO_CURRENCIES } from '#scripts/local/seed.ts';
import { forgetListMarkers } from '#shared/data/list-markers.ts';
import { listShard } from '#shared/data/listing.ts';
import { keys, listKeys } from '#shared/data/table.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { documentedReply } from '../support/contract.ts';
import { unmarkProductLists } from '../support/legacy-products.ts';
import {
  expectCountsInStep,
  expectListedInStep,
  listedPartitions,
  productEntries,
} from '../support/products.ts';
import { putItems, softDelete } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
/** A user of both demo organizations, and one who may only read products. */
let bothOrgsPat: string;
let readOnlyPat: string;
beforeAll(async () => {
  world = await createWorld('products');
  const { admin, demo } = world;
  const both = await createUser(admin, { email: `both+${randomUUID()}@x.example` });
  await addMember(admin, demo.organization_id, both.id);
  await addMember(admin, demo.other_organization.organization_id, both.id);
  bothOrgsPat = (await createPersonalAccessToken(admin, { userId: both.id, scope: ALL_SCOPES.join(' ') }))
    .token;
  const reader = await createUser(admin, { email: `reader+${randomUUID()}@x.example` });
  await addMember(admin, demo.organization_id, reader.id);
  readOnlyPat = (await createPersonalAccessToken(admin, { userId: reader.id, scope: 'products:read' })).token;
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const org = () => world.demo.organization_id;
const create = (body: unknown, token = pat(), headers?: Record<string, string>) =>
  world.call('POST', '/v1/products/', { token, body, ...(headers ? { headers } : {}) });
const list = (query = '', token = pat()) =>
  world.call('GET', `/v1/products/${query ? `?${query}` : ''}`, { token });
const update = (id: string, body: unknown, token = pat()) =>
  world.call('PATCH', `/v1/products/${id}`, { token, body });
const get = (id: string) => world.call('GET', `/v1/products/${id}`, { token: pat() });
const subscribe = (productId: string) =>
  world.call('POST', '/v1/subscriptions/', {
    token: pat(),
    body: { product_id: productId, customer_id: world.demo.customer_id },
  });

/** Twenty currencies, the organization's first: the most prices one request may carry. */
const TWENTY_CURRENCIES = DEMO_CURRENCIES.slice(0, 20);

const monthlyFree = (name = `Plan ${randomUUID()}`) => ({
  name,
  recurring_interval: 'month',
  prices: [{ amount_type: 'fixed', price_amount: 0 }],
});

async function created(body: unknown = monthlyFree()): Promise<Reply['body']> {
  const reply = await create(body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

/** The 422 body of a catalogue rule. */
const rule = (loc: string[], msg: string, input: unknown) => ({
  error: 'PolarRequestValidationError',
  detail: [{ loc, msg, type: 'value_error', input }],
});

describe('POST /v1/products/', () => {
  it('creates a free monthly product (201) in 3 round trips, listed in step; Get Product reads it back', async () => {
    world.resetCount();
    const reply = documentedReply(
      'createProduct',
      await create({
        ...monthlyFree('Starter'),
        description: 'Line one\nline two',
        metadata: { tier: 'starter', seats: 3, tiny: 2e-323, huge: 1e300 },
      }),
    );
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      name: 'Starter',
      description: 'Line one\nline two',
      visibility: 'public',
      recurring_interval: 'month',
      recurring_interval_count: 1,
      is_recurring: true,
      is_archived: false,
      organization_id: org(),
      modified_at: null,
      trial_interval: null,
      metadata: { tier: 'starter', seats: 3, tiny: 2e-323, huge: 1e300 },
      benefits: [],
      medias: [],
      attached_custom_fields: [],
    });
    expect(reply.body.prices).toEqual([
      expect.objectContaining({
        amount_type: 'fixed',
        price_amount: 0,
        price_currency: 'usd',
        is_archived: false,
        product_id: reply.body.id,
        type: 'recurring',
        recurring_interval: 'month',
        legacy: false,
        tax_behavior: null,
      }),
    ]);
    world.resetCount();
    expect(documentedReply('getProduct', await get(reply.body.id)).body).toEqual(reply.body);
    expect(world.roundTrips()).toBe(2);
    const stored = await expectListedInStep(world.table, org(), reply.body.id);
    // Stored as JSON text, so numbers DynamoDB cannot hold come back as sent.
    expect(typeof stored?.metadata).toBe('string');
    expect(await productEntries(world.table, org(), reply.body.id)).toHaveLength(16);
    await expectCountsInStep(world.table, org());
  });

  it('a free product can be subscribed; a paid one is refused by Create Subscription as not free', async () => {
    const free = await created();
    expect((await subscribe(free.id)).status).toBe(201);
    const paid = await created({
      name: `Paid ${randomUUID()}`,
      recurring_interval: 'year',
      recurring_interval_count: 2,
      prices: [{ amount_type: 'fixed', price_amount: 1500, tax_behavior: 'inclusive' }],
    });
    expect(paid).toMatchObject({ recurring_interval: 'year', recurring_interval_count: 2 });
    expect(paid.prices[0]).toMatchObject({ price_amount: 1500, tax_behavior: 'inclusive' });
    const refused = await subscribe(paid.id);
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0].msg).toMatch(/^Product is not free/);
  });

  it('takes the legacy free price as a fixed price of 0, one-time products, and prices in several currencies', async () => {
    const legacy = await created({
      name: `Legacy ${randomUUID()}`,
      recurring_interval: 'week',
      prices: [{ amount_type: 'free' }],
    });
    expect(legacy.prices).toEqual([expect.objectContaining({ amount_type: 'fixed', price_amount: 0 })]);
    expect((await subscribe(legacy.id)).status).toBe(201);
    const oneTime = await created({
      name: `E-book ${randomUUID()}`,
      prices: [
        { amount_type: 'fixed', price_amount: 900, price_currency: 'eur' },
        { amount_type: 'fixed', price_amount: 1000 },
        { amount_type: 'fixed', price_amount: 800, price_currency: 'gbp' },
      ],
    });
    expect(oneTime).toMatchObject({
      is_recurring: false,
      recurring_interval: null,
      recurring_interval_count: null,
    });
    // The organization's currency first (the price the product sorts by), the others as sent.
    expect(oneTime.prices.map((p: { price_currency: string }) => p.price_currency)).toEqual([
      'usd',
      'eur',
      'gbp',
    ]);
    expect(oneTime.prices[0]).toMatchObject({ type: 'one_time', recurring_interval: null });
    const refused = await subscribe(oneTime.id);
    expect(refused.body.detail[0].msg).toBe('Product is not a recurring product.');
  });

  it('refuses every other price type and every bad input with the schema’s 422, writing nothing', async () => {
    const cases: [unknown, string[]][] = [
      [
        { ...monthlyFree(), prices: [{ amount_type: 'custom', minimum_amount: 100 }] },
        ['body', 'prices', '0', 'amount_type'],
      ],
      [{ ...monthlyFree(), prices: [{ amount_type: 'seat_based' }] }, ['body', 'prices', '0', 'amount_type']],
      // A metered price without its unit amount and meter (metered-prices.test.ts covers the rest).
      [
        { ...monthlyFree(), prices: [{ amount_type: 'metered_unit', meter_id: randomUUID() }] },
        ['body', 'prices', '0', 'unit_amount'],
      ],
      [{ ...monthlyFree(), prices: [{ amount_type: 'unit_based' }] }, ['body', 'prices', '0', 'amount_type']],
      [{ ...monthlyFree(), prices: [{ amount_type: 'fixed' }] }, ['body', 'prices', '0', 'price_amount']],
      [
        { ...monthlyFree(), prices: [{ amount_type: 'fixed', price_amount: -1 }] },
        ['body', 'prices', '0', 'price_amount'],
      ],
      [
        { ...monthlyFree(), prices: [{ amount_type: 'fixed', price_amount: 1.5 }] },
        ['body', 'prices', '0', 'price_amount'],
      ],
      [
        { ...monthlyFree(), prices: [{ amount_type: 'free', price_amount: 5 }] },
        ['body', 'prices', '0', 'price_amount'],
      ],
      [
        { ...monthlyFree(), prices: [{ amount_type: 'fixed', price_amount: 1, price_currency: 'USD' }] },
        ['body', 'prices', '0', 'price_currency'],
      ],
      [
        { ...monthlyFree(), prices: [{ amount_type: 'fixed', price_amount: 1, price_currency: 'xdr' }] },
        ['body', 'prices', '0', 'price_currency'],
      ],
      [{ ...monthlyFree(), prices: [] }, ['body', 'prices']],
      [{ ...monthlyFree(), name: 'ab' }, ['body', 'name']],
      [{ ...monthlyFree(), name: 'x'.repeat(65) }, ['body', 'name']],
      [{ ...monthlyFree(), name: 'bell\u0007x' }, ['body', 'name']],
      [{ ...monthlyFree(), description: 'x'.repeat(5001) }, ['body', 'description']],
      [{ ...monthlyFree(), recurring_interval: 'fortnight' }, ['body', 'recurring_interval']],
      [{ ...monthlyFree(), recurring_interval_count: 1000 }, ['body', 'recurring_interval_count']],
      [{ ...monthlyFree(), metadata: { k: null } }, ['body', 'metadata', 'k']],
      [{ ...monthlyFree(), visibility: 'hidden' }, ['body', 'visibility']],
    ];
    const before = await list('limit=1');
    for (const [body, loc] of cases) {
      const reply = documentedReply('createProduct', await create(body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
      expect(
        reply.body.detail.map((d: { loc: string[] }) => d.loc),
        JSON.stringify(body),
      ).toEqual([loc]);
    }
    expect((await list('limit=1')).body.pagination).toEqual(before.body.pagination);
    expect((await create({ ...monthlyFree(), prices: [{ amount_type: 'custom' }] })).body.detail[0].msg).toBe(
      "Input should be 'fixed', 'free' or 'metered_unit'",
    );
  });

  it('refuses what breaks a catalogue rule with PolarRequestValidationError, writing nothing', async () => {
    const before = (await list('limit=1')).body.pagination;
    const two = { amount_type: 'fixed', price_amount: 5 };
    expect(
      (await create({ ...monthlyFree(), prices: [two, { ...two, price_currency: 'usd' }] })).body,
    ).toEqual(rule(['body', 'prices', '1'], 'Only one price per currency is allowed.', 'usd'));
    const euros = [{ ...two, price_currency: 'eur' }];
    expect((await create({ ...monthlyFree(), prices: euros })).body).toEqual(
      rule(
        ['body', 'prices'],
        "The organization's default presentment currency must be present in the prices.",
        euros,
      ),
    );
    expect(
      (await create({ ...monthlyFree(), recurring_interval: null, recurring_interval_count: 2 })).body,
    ).toEqual(
      rule(['body', 'recurring_interval_count'], 'A one-time product has no recurring interval count.', 2),
    );
    const unsupported = await create({
      ...monthlyFree(),
      trial_interval: 'month',
      trial_interval_count: 1,
      meter_interval: 'day',
      medias: [randomUUID()],
      attached_custom_fields: [{}],
    });
    expect(unsupported.status).toBe(422);
    expect(unsupported.body.detail.map((d: { loc: string[]; msg: string }) => [d.loc[1], d.msg])).toEqual([
      ['trial_interval', 'Trials are not supported by this API.'],
      ['trial_interval_count', 'Trials are not supported by this API.'],
      ['meter_interval', 'Metered billing is not supported by this API.'],
      ['medias', 'Product media are not supported by this API.'],
      ['attached_custom_fields', 'Custom fields are not supported by this API.'],
    ]);
    // Left out, null or empty, they are accepted.
    expect(
      (await create({ ...monthlyFree(), trial_interval: null, medias: [], attached_custom_fields: null }))
        .status,
    ).toBe(201);
    expect((await list('limit=1')).body.pagination.total_count).toBe(before.total_count + 1);
  });

  it('organization_id: another organization’s is unknown; needed by a member of several', async () => {
    const foreign = await create({
      ...monthlyFree(),
      organization_id: world.demo.other_organization.organization_id,
    });
    expect(foreign.body).toEqual(
      rule(
        ['body', 'organization_id'],
        'Organization does not exist.',
        world.demo.other_organization.organization_id,
      ),
    );
    const ambiguous = await create(monthlyFree(), bothOrgsPat);
    expect(ambiguous.body.detail[0]).toMatchObject({
      loc: ['body', 'organization_id'],
      msg: 'organization_id is required: you belong to several organizations.',
    });
    // The other organization's default currency is eur: its product's price defaults to it.
    const theirs = await create(
      { ...monthlyFree(), organization_id: world.demo.other_organization.organization_id },
      bothOrgsPat,
    );
    expect(theirs.status).toBe(201);
    expect(theirs.body.prices[0].price_currency).toBe('eur');
  });

  it('of 8 concurrent creates in one organization every one is a 201, the lists counted exactly', async () => {
    const replies = await Promise.all(Array.from({ length: 8 }, () => create(monthlyFree())));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201));
    for (const reply of replies) await expectListedInStep(world.table, org(), reply.body.id);
    await expectCountsInStep(world.table, org());
  });

  it('honours Idempotency-Key, and needs products:write', async () => {
    const key = `products-${randomUUID()}`;
    const body = monthlyFree();
    const first = await create(body, pat(), { 'idempotency-key': key });
    const second = await create(body, pat(), { 'idempotency-key': key });
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect((await list(`query=${encodeURIComponent(body.name)}`)).body.pagination.total_count).toBe(1);
    expect((await create(monthlyFree(), readOnlyPat)).status).toBe(403);
    expect((await create(monthlyFree(), world.demo.personal_access_token_without_scopes)).status).toBe(403);
  });

  it('a product at every limit fits: 50 metadata pairs of 500 four-byte characters, 5000 of description, 20 prices; it updates and archives', async () => {
    const wide = '😀'.repeat(500);
    const currencies = TWENTY_CURRENCIES;
    const body = {
      name: '😀'.repeat(64),
      description: '😀'.repeat(5000),
      recurring_interval: 'month',
      metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${'😀'.repeat(38)}${i}`, wide])),
      prices: currencies.map((price_currency, i) => ({
        amount_type: 'fixed',
        price_amount: i,
        price_currency,
      })),
    };
    const product = await created(body);
    const renamed = await update(product.id, {
      name: `${'😀'.repeat(60)}abcd`,
      is_archived: true,
      prices: currencies.map((price_currency) => ({ amount_type: 'fixed', price_amount: 7, price_currency })),
    });
    expect(renamed.status).toBe(200);
    await expectListedInStep(world.table, org(), product.id);
  });
});

describe('GET /v1/products/', () => {
  /** A fresh organization with its own catalogue, so that orders and counts are exact. */
  let shop: { token: string; organizationId: string; ids: Record<string, string> };
  beforeAll(async () => {
    const { admin } = world;
    const organization = await createOrganization(admin, { name: 'Shop', defaultCurrency: 'usd' });
    const owner = await createUser(admin, { email: `shop+${randomUUID()}@x.example` });
    await addMember(admin, organization.id, owner.id);
    const token = (
      await createPersonalAccessToken(admin, { userId: owner.id, scope: 'products:read products:write' })
    ).token;
    const ids: Record<string, string> = {};
    // Created one by one, so that created_at follows this order.
    for (const [name, amount, interval, archived] of [
      ['Basic', 500, 'month', false],
      ['apple', 0, 'month', false],
      ['Pro', 1500, 'year', false],
      ['Professional', 1500, null, false],
      ['Zeta', 0, null, true],
      ['old plan', 300, 'month', true],
    ] as const) {
      const reply = await create(
        { name, recurring_interval: interval, prices: [{ amount_type: 'fixed', price_amount: amount }] },
        token,
      );
      expect(reply.status).toBe(201);
      ids[name] = reply.body.id;
      if (archived) expect((await update(reply.body.id, { is_archived: true }, token)).status).toBe(200);
    }
    shop = { token, organizationId: organization.id, ids };
  });
  const names = (reply: Reply) => reply.body.items.map((p: { name: string }) => p.name);
  const shopList = (query = '') => list(query, shop.token);

  it('pages newest first by default, in 2 + non-empty shards round trips (3 on its first page in a container: the marker), total_count and max_page from the counts', async () => {
    const shards = await listedPartitions(world.table, [shop.organizationId]);
    expect(shards).toBeGreaterThan(1);
    forgetListMarkers(world.table, [shop.organizationId]);
    world.resetCount();
    const reply = documentedReply('listProducts', await shopList('limit=4'));
    // Token, the organization's list marker (its first page in this container: a new organization
    // is marked `product_lists`), the 16 shards' counts in one batch (no old partition), then one
    // Query per non-empty shard (was 2 + shards before the marker, the batch reading 17 partitions;
    // 3 with one partition).
    expect(world.roundTrips()).toBe(3 + shards);
    // Known marked from then on: the marker is not read again.
    world.resetCount();
    await shopList('limit=4');
    expect(world.roundTrips()).toBe(2 + shards);
    expect(names(reply)).toEqual(['old plan', 'Zeta', 'Professional', 'Pro']);
    expect(reply.body.pagination).toEqual({ total_count: 6, max_page: 2 });
    expect(names(await shopList('limit=4&page=2'))).toEqual(['apple', 'Basic']);
    const past = await shopList('limit=4&page=3');
    expect(past.body).toEqual({ items: [], pagination: { total_count: 6, max_page: 2 } });
    expect((await shopList('limit=1000')).body.pagination).toEqual({ total_count: 6, max_page: 1 });
    await expectCountsInStep(world.table, shop.organizationId);
  });

  it('sorts by each field, both ways, with further criteria and ties broken by ascending id', async () => {
    expect(names(await shopList('sorting=name'))).toEqual([
      'apple',
      'Basic',
      'old plan',
      'Pro',
      'Professional',
      'Zeta',
    ]);
    expect(names(await shopList('sorting=-name'))).toEqual([
      'Zeta',
      'Professional',
      'Pro',
      'old plan',
      'Basic',
      'apple',
    ]);
    const byPrice = names(await shopList('sorting=price_amount&sorting=-created_at'));
    expect(byPrice).toEqual(['Zeta', 'apple', 'old plan', 'Basic', 'Professional', 'Pro']);
    const byPriceDesc = names(await shopList('sorting=-price_amount&sorting=name'));
    expect(byPriceDesc).toEqual(['Pro', 'Professional', 'Basic', 'old plan', 'apple', 'Zeta']);
    // Every product's amount type is `fixed`: one tie group, in ascending id order.
    const byType = (await shopList('sorting=price_amount_type')).body.items.map((p: { id: string }) => p.id);
    expect(byType).toEqual([...byType].sort());
    // Walking pages of one item each gives the same order as one page.
    const walked: string[] = [];
    for (let page = 1; page <= 6; page++)
      walked.push(...names(await shopList(`sorting=-price_amount&sorting=name&limit=1&page=${page}`)));
    expect(walked).toEqual(byPriceDesc);
  });

  it('filters by is_archived and is_recurring from their own views, counted exactly', async () => {
    const live = await shopList('is_archived=false&sorting=name');
    expect(names(live)).toEqual(['apple', 'Basic', 'Pro', 'Professional']);
    expect(live.body.pagination.total_count).toBe(4);
    expect(names(await shopList('is_archived=true&sorting=name'))).toEqual(['old plan', 'Zeta']);
    expect(names(await shopList('is_recurring=false&sorting=name'))).toEqual(['Professional', 'Zeta']);
    const both = await shopList('is_archived=false&is_recurring=true&sorting=name');
    expect(names(both)).toEqual(['apple', 'Basic', 'Pro']);
    expect(both.body.pagination).toEqual({ total_count: 3, max_page: 1 });
    const shards = await listedPartitions(
      world.table,
      [shop.organizationId],
      [
        ['is_archived', 'false'],
        ['is_recurring', 'true'],
      ],
    );
    world.resetCount();
    await shopList('is_archived=false&is_recurring=true&limit=1&page=2');
    // Token, the view's counts in its 17 partitions in one batch, its non-empty shards (was 3).
    expect(world.roundTrips()).toBe(2 + shards);
  });

  it('query: a name prefix, compared in lowercase, with the other filters; 1 + 16 round trips', async () => {
    world.resetCount();
    const pro = documentedReply('listProducts', await shopList('query=PRO&sorting=-name'));
    // Token, then the prefix's range in each of the 16 shards (marked, known from the pages before:
    // no old partition; 1 + 17 before the marker; was 2).
    expect(world.roundTrips()).toBe(1 + 16);
    expect(names(pro)).toEqual(['Professional', 'Pro']);
    expect(pro.body.pagination).toEqual({ total_count: 2, max_page: 1 });
    expect(names(await shopList('query=pro&is_recurring=true'))).toEqual(['Pro']);
    expect(names(await shopList('query=plan'))).toEqual([]);
    expect(names(await shopList('query=old%20p'))).toEqual(['old plan']);
    expect((await shopList('query=')).body.pagination.total_count).toBe(6);
  });

  it('a prefix matching more than 1000 products of one organization is a 422', async () => {
    const { admin } = world;
    const bulk = await createOrganization(admin, { name: 'Bulk', defaultCurrency: 'usd' });
    const owner = await createUser(admin, { email: `bulk+${randomUUID()}@x.example` });
    await addMember(admin, bulk.id, owner.id);
    const token = (await createPersonalAccessToken(admin, { userId: owner.id, scope: 'products:read' }))
      .token;
    // Name entries only (what a prefix reads), written in bulk in the old partition: 1001 products
    // named "bulk …", of an organization from before the marker (read there).
    await unmarkProductLists(world.table, bulk.id);
    const entries = Array.from({ length: 1001 }, (_, i) => {
      const id = randomUUID();
      return {
        ...listKeys.entry('productList', bulk.id, `name#1bulk ${i}\u0001#${id}`),
        id,
        name: `bulk ${i}`,
      };
    });
    await putItems(world.table, entries);
    const reply = documentedReply('listProducts', await list('query=bulk', token));
    expect(reply.body).toEqual(
      rule(
        ['query', 'query'],
        'More than 1000 products of one organization start with this text: use a longer one.',
        'bulk',
      ),
    );
  });

  it('the 1000-match bound is the organization’s, over its 16 shards: 1001 matches spread over them are a 422', async () => {
    const { admin } = world;
    const bulk = await createOrganization(admin, { name: 'Spread', defaultCurrency: 'usd' });
    const owner = await createUser(admin, { email: `spread+${randomUUID()}@x.example` });
    await addMember(admin, bulk.id, owner.id);
    const token = (await createPersonalAccessToken(admin, { userId: owner.id, scope: 'products:read' }))
      .token;
    // Name entries only, each in the shard its id chooses (at most about 90 in any one shard).
    const entries = Array.from({ length: 1001 }, (_, i) => {
      const id = randomUUID();
      return {
        ...listKeys.entry('productList', listShard(bulk.id, id), `name#1spread ${i}\u0001#${id}`),
        id,
        organization_id: bulk.id,
        created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
        name: `spread ${i}`,
        metadata: '{}',
        prices: [],
      };
    });
    expect(new Set(entries.map((entry) => entry.PK)).size).toBe(16);
    await putItems(world.table, entries);
    const reply = documentedReply('listProducts', await list('query=spread', token));
    expect(reply.body).toEqual(
      rule(
        ['query', 'query'],
        'More than 1000 products of one organization start with this text: use a longer one.',
        'spread',
      ),
    );
  });

  it('organization_id narrows to the caller’s organizations; another one counts as unknown', async () => {
    const demoOnly = await list(`organization_id=${org()}&limit=100`, bothOrgsPat);
    const everything = await list('limit=100', bothOrgsPat);
    expect(demoOnly.body.items.every((p: { organization_id: string }) => p.organization_id === org())).toBe(
      true,
    );
    expect(everything.body.pagination.total_count).toBeGreaterThan(demoOnly.body.pagination.total_count);
    expect(
      new Set(everything.body.items.map((p: { organization_id: string }) => p.organization_id)).size,
    ).toBe(2);
    const foreign = await list(`organization_id=${world.demo.other_organization.organization_id}`);
    const unknown = await list(`organization_id=${randomUUID()}`);
    expect(foreign.status).toBe(200);
    expect(foreign.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
    expect(unknown.body).toEqual(foreign.body);
    // A member of two organizations: both organizations' counts in one batch, then each non-empty
    // partition's Query (was 5: each organization's count and query).
    const shards = await listedPartitions(world.table, [
      org(),
      world.demo.other_organization.organization_id,
    ]);
    world.resetCount();
    await list('', bothOrgsPat);
    expect(world.roundTrips()).toBe(2 + shards);
  });

  it('refuses bad parameters (422) and filters it does not support (never ignored); products:read suffices', async () => {
    for (const [query, loc] of [
      ['is_archived=yes', ['query', 'is_archived']],
      ['sorting=price', ['query', 'sorting', '0']],
      ['organization_id=nope', ['query', 'organization_id', '0']],
      ['page=0', ['query', 'page']],
      ['limit=1.5', ['query', 'limit']],
    ] as const) {
      const reply = documentedReply('listProducts', await list(query));
      expect(reply.status, query).toBe(422);
      expect(reply.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([loc]);
    }
    for (const name of ['visibility', 'id', 'benefit_id']) {
      const reply = documentedReply('listProducts', await list(`${name}=public`));
      expect(reply.body).toEqual(
        rule(['query', name], `Filtering products by ${name} is not supported by this API.`, ['public']),
      );
    }
    const metadata = documentedReply('listProducts', await list('metadata%5Btier%5D=gold'));
    expect(metadata.body).toEqual(
      rule(['query', 'metadata'], 'Filtering products by metadata is not supported by this API.', {
        tier: ['gold'],
      }),
    );
    expect((await list('', readOnlyPat)).status).toBe(200);
    expect((await list('', world.demo.personal_access_token_without_scopes)).status).toBe(403);
  });
});

describe('PATCH /v1/products/{id}', () => {
  it('changes the fields named, in 3 round trips; null keeps a field, description null clears it', async () => {
    const product = await created({ ...monthlyFree(), description: 'before', metadata: { a: 1 } });
    world.resetCount();
    const reply = documentedReply(
      'updateProduct',
      await update(product.id, {
        name: 'After',
        visibility: 'private',
        metadata: { b: true },
        description: null,
      }),
    );
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      name: 'After',
      visibility: 'private',
      metadata: { b: true },
      description: null,
      prices: product.prices,
      created_at: product.created_at,
    });
    expect(reply.body.modified_at).not.toBeNull();
    expect((await get(product.id)).body).toEqual(reply.body);
    const kept = await update(product.id, { name: null, visibility: null, is_archived: null, prices: null });
    expect(kept.body).toEqual(reply.body);
    await expectListedInStep(world.table, org(), product.id);
  });

  it('nothing to change: answered in 2 round trips, nothing written, modified_at kept', async () => {
    const product = await created();
    world.resetCount();
    const same = await update(product.id, {
      name: product.name,
      recurring_interval: 'month',
      recurring_interval_count: 1,
    });
    expect(world.roundTrips()).toBe(2);
    expect(same.body).toEqual(product);
    expect((await update(product.id, {})).body).toEqual(product);
  });

  it('archiving: no new subscriptions, existing ones keep reading it; it moves between the views', async () => {
    const product = await created();
    const subscription = await subscribe(product.id);
    expect(subscription.status).toBe(201);
    const archived = await update(product.id, { is_archived: true });
    expect(archived.body.is_archived).toBe(true);
    expect((await subscribe(product.id)).body.detail[0].msg).toBe('Product is archived.');
    const read = await world.call('GET', `/v1/subscriptions/${subscription.body.id}`, { token: pat() });
    expect(read.body.product).toMatchObject({ id: product.id, is_archived: true });
    const inArchive = (await list(`is_archived=true&query=${encodeURIComponent(product.name)}`)).body.items;
    expect(inArchive.map((p: { id: string }) => p.id)).toEqual([product.id]);
    expect((await list(`is_archived=false&query=${encodeURIComponent(product.name)}`)).body.items).toEqual(
      [],
    );
    await expectListedInStep(world.table, org(), product.id);
    await expectCountsInStep(world.table, org());
    expect((await update(product.id, { is_archived: false })).body.is_archived).toBe(false);
    expect((await subscribe(product.id)).status).toBe(201);
    await expectCountsInStep(world.table, org());
  });

  it('prices: the list replaces the product’s; prices left out are archived and still shown by subscriptions billed on them', async () => {
    const product = await created({
      name: `Multi ${randomUUID()}`,
      recurring_interval: 'month',
      prices: [
        { amount_type: 'fixed', price_amount: 0 },
        { amount_type: 'fixed', price_amount: 0, price_currency: 'eur' },
      ],
    });
    const [usd, eur] = product.prices;
    const subscription = await subscribe(product.id);
    expect(subscription.body.prices.map((p: { id: string }) => p.id)).toEqual([usd.id]);
    const replaced = documentedReply(
      'updateProduct',
      await update(product.id, {
        prices: [{ id: eur.id.toUpperCase() }, { amount_type: 'fixed', price_amount: 2500 }],
      }),
    );
    expect(replaced.status).toBe(200);
    // Live prices only: the kept one and the new one, the organization's currency first.
    expect(
      replaced.body.prices.map((p: { price_currency: string; price_amount: number }) => [
        p.price_currency,
        p.price_amount,
      ]),
    ).toEqual([
      ['usd', 2500],
      ['eur', 0],
    ]);
    expect(replaced.body.prices[1].id).toBe(eur.id);
    const read = await world.call('GET', `/v1/subscriptions/${subscription.body.id}`, { token: pat() });
    expect(read.body.prices).toEqual([
      expect.objectContaining({ id: usd.id, is_archived: true, price_amount: 0 }),
    ]);
    expect(read.body.product.prices.map((p: { id: string }) => p.id)).not.toContain(usd.id);
    // Now paid in the organization's currency: no new free subscriptions.
    expect((await subscribe(product.id)).body.detail[0].msg).toMatch(/^Product is not free/);
    const sorted = (await list(`sorting=-price_amount&query=${encodeURIComponent(product.name)}`)).body.items;
    expect(sorted[0].prices[0].price_amount).toBe(2500);
    await expectListedInStep(world.table, org(), product.id);
  });

  it('refuses price ids that are not its live prices, a changed interval, and what create refuses', async () => {
    const product = await created();
    const other = await created();
    const [price] = product.prices;
    const foreignPrice = other.prices[0].id;
    expect((await update(product.id, { prices: [{ id: foreignPrice }] })).body).toEqual(
      rule(['body', 'prices', '0', 'id'], 'Price does not exist.', foreignPrice),
    );
    expect((await update(product.id, { prices: [{ amount_type: 'fixed', price_amount: 0 }] })).status).toBe(
      200,
    );
    // The usd price is archived now: it cannot be kept any more.
    expect((await update(product.id, { prices: [{ id: price.id }] })).body.detail[0].msg).toBe(
      'Price does not exist.',
    );
    expect((await update(product.id, { recurring_interval: 'year' })).body).toEqual(
      rule(
        ['body', 'recurring_interval'],
        'The recurring interval is fixed when the product is created: create a new product instead.',
        'year',
      ),
    );
    expect((await update(product.id, { recurring_interval_count: 3 })).body.detail[0].loc).toEqual([
      'body',
      'recurring_interval_count',
    ]);
    expect((await update(product.id, { trial_interval: 'day' })).body.detail[0].msg).toBe(
      'Trials are not supported by this API.',
    );
    const bad = await update(product.id, { name: 'x', prices: [{ amount_type: 'custom' }] });
    expect(bad.body.error).toBe('RequestValidationError');
    expect(bad.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([
      ['body', 'name'],
      ['body', 'prices', '0', 'amount_type'],
    ]);
    await expectListedInStep(world.table, org(), product.id);
  });

  it('a product keeps at most 100 prices, archived ones included', async () => {
    const product = await created();
    const twenty = (amount: number) =>
      TWENTY_CURRENCIES.map((price_currency) => ({
        amount_type: 'fixed',
        price_amount: amount,
        price_currency,
      }));
    // 1 + 4 × 20 = 81 stored prices, then 101: refused.
    for (let i = 1; i <= 4; i++) expect((await update(product.id, { prices: twenty(i) })).status).toBe(200);
    const refused = await update(product.id, { prices: twenty(9) });
    expect(refused.body.detail[0]).toMatchObject({
      loc: ['body', 'prices'],
      msg: 'A product keeps at most 100 prices, archived ones included: create a new product instead.',
    });
    // Keeping the live prices adds nothing: still accepted.
    const live = (await get(product.id)).body.prices.map((p: { id: string }) => ({ id: p.id }));
    expect((await update(product.id, { prices: live, name: 'Still here' })).status).toBe(200);
  });

  it('of 5 concurrent updates of one product every one lands: none lost, the entries in step', async () => {
    const product = await created();
    const replies = await Promise.all([
      update(product.id, { name: 'Concurrent' }),
      update(product.id, { description: 'concurrent' }),
      update(product.id, { visibility: 'draft' }),
      update(product.id, { metadata: { concurrent: true } }),
      update(product.id, { is_archived: true }),
    ]);
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await get(product.id)).body).toMatchObject({
      name: 'Concurrent',
      description: 'concurrent',
      visibility: 'draft',
      metadata: { concurrent: true },
      is_archived: true,
    });
    await expectListedInStep(world.table, org(), product.id);
    await expectCountsInStep(world.table, org());
  });

  it('another organization’s product, a deleted one and an unknown id are the same 404; products:write needed', async () => {
    const unknown = documentedReply('updateProduct', await update(randomUUID(), { name: 'Nobody' }));
    expect(unknown.status).toBe(404);
    expect((await update(world.demo.other_organization.free_product_id, { name: 'Mine' })).body).toEqual(
      unknown.body,
    );
    const gone = await created();
    await softDelete(world.table, keys.product(gone.id));
    expect((await update(gone.id, { name: 'Back' })).body).toEqual(unknown.body);
    expect((await update('not-a-uuid', { name: 'Nobody' })).status).toBe(422);
    const mine = await created();
    expect((await update(mine.id, { name: 'Reader' }, readOnlyPat)).status).toBe(403);
    // A member of both organizations changes either's products.
    expect(
      (
        await update(
          world.demo.other_organization.free_product_id,
          { metadata: { via: 'both' } },
          bothOrgsPat,
        )
      ).status,
    ).toBe(200);
  });

  it('a product written before products were listed enters the lists on its first update', async () => {
    const id = randomUUID();
    const now = new Date().toISOString();
    await world.table.doc.send(
      new PutCommand({
        TableName: world.table.name,
        Item: {
          ...keys.product(id),
          entity: 'product',
          id,
          organization_id: org(),
          created_at: now,
          modified_at: null,
          name: `Legacy ${id}`,
          description: null,
          visibility: 'public',
          recurring_interval: 'month',
          recurring_interval_count: 1,
          is_archived: false,
          metadata: { old: 'map' },
          prices: [
            {
              id: randomUUID(),
              created_at: now,
              modified_at: null,
              amount_type: 'fixed',
              price_currency: 'usd',
              price_amount: 0,
              is_archived: false,
            },
          ],
          deleted_at: null,
        },
      }),
    );
    expect(await productEntries(world.table, org(), id)).toEqual([]);
    const reply = await update(id, { description: 'listed now' });
    expect(reply.status).toBe(200);
    expect(reply.body.metadata).toEqual({ old: 'map' });
    await expectListedInStep(world.table, org(), id);
    await expectCountsInStep(world.table, org());
  });
});
