/**
 * The read bound of every list (shared/data/listing.ts `ReadBudget`): no list request reads more
 * than 500 read units of its list partitions at any page (a strongly consistent Query costs 1 read
 * unit per 4 KB it reads; a page's records read by key with slim entries, 1 per 4 KB of each), and
 * no list answer passes Lambda's 6 MB. Each Query and BatchGetItem the list functions send is
 * recorded and priced from the items it returned.
 *
 * - A deep page (the counts say 1,000,000 entries) is a 422 at `page`, answered before any entry is
 *   read: only the count shards are queried.
 * - Records too large for the budget (customers at every input limit) are a 422 at `limit`, having
 *   read at most 500 read units; `query=` on List Customers likewise (a 422 at `query`).
 * - 18 subscriptions at every limit (each embeds its customer and product: ≈ 351 KB) make an answer
 *   past 6 MB: a 422 at `limit`, never an answer Lambda would refuse.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOMER_ITEM_BYTES, customerListing, customerListOwners } from '#shared/data/customers.ts';
import { itemBytes } from '#shared/data/item-size.ts';
import { ENTRY_BYTES, LIST_READ_UNITS } from '#shared/data/listing.ts';
import { productListOwners } from '#shared/data/products.ts';
import { SUBSCRIPTION_ITEM_BYTES, subscriptionListSources } from '#shared/data/subscriptions.ts';
import {
  keys,
  LIST_COUNT_PREFIX,
  type ListPartition,
  listKeys,
  subscriptionListOwners,
} from '#shared/data/table.ts';
import { answerBytes, MAX_ANSWER_BYTES } from '#shared/services/paging.ts';
import { documentedReply } from '../support/contract.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
/**
 * Per list function, the reads it sent: each Query's key prefix and read units (bytes read, 4 KB
 * each, at least 1), and each BatchGetItem of a page's records (`records`, 4 KB per item rounded up).
 */
const queries = new Map<string, { prefix: string; units: number }[]>();
const LIST_FUNCTIONS = [
  'list-customers',
  'list-products',
  'list-subscriptions',
  'list-customer-subscriptions',
  'list-webhook-endpoints',
];

/** The records a list function reads by key for its page (slim entries). */
const LISTED_RECORDS: Record<string, string> = {
  'list-customers': 'customer',
  'list-subscriptions': 'subscription',
  'list-customer-subscriptions': 'subscription',
};

beforeAll(async () => {
  world = await createWorld('list-bounds');
  for (const name of LIST_FUNCTIONS) {
    world.depsFor(name).table.doc.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
        // A page's records read by key (slim entries): each item rounded up to 4 KB on its own.
        if (args.input && 'RequestItems' in (args.input as object)) {
          const responses = (result.output as { Responses?: Record<string, Record<string, unknown>[]> })
            .Responses;
          const asked = Object.values(
            (args.input as { RequestItems: Record<string, { Keys: { SK: string }[] }> }).RequestItems,
          ).flatMap((request) => request.Keys) as { PK: string; SK: string }[];
          // The organizations' list markers (shared/data/list-markers.ts), read before the list and
          // outside its bound: half a unit per organization, once per container for a marked one.
          if (asked.every((key) => String(key.PK).startsWith('ORG#'))) return result;
          // The counts of many list partitions read by key (customers: 16 shards and the old one).
          if (asked.every((key) => String(key.SK).startsWith(LIST_COUNT_PREFIX))) {
            const counts = Object.values(responses ?? {}).flat();
            const units = counts.reduce((sum, item) => sum + Math.ceil(itemBytes(item) / 4096), 0);
            queries.get(name)?.push({ prefix: LIST_COUNT_PREFIX, units });
            return result;
          }
          // Only the listed kind's own records: a subscription's answer also embeds its customer
          // and product, read by the service after the page (outside the list's bound).
          const items = Object.values(responses ?? {})
            .flat()
            .filter((item) => item.entity === LISTED_RECORDS[name]);
          const units = items.reduce((sum, item) => sum + Math.ceil(itemBytes(item) / 4096), 0);
          queries.get(name)?.push({ prefix: 'records', units });
        }
        if (args.input && 'KeyConditionExpression' in (args.input as object)) {
          const items = ((result.output as { Items?: Record<string, unknown>[] }).Items ?? []).map((i) => i);
          const bytes = items.reduce((sum, item) => sum + itemBytes(item), 0);
          const values = input.ExpressionAttributeValues ?? {};
          const prefix = String(values[':prefix'] ?? values[':field'] ?? values[':count'] ?? '');
          queries.get(name)?.push({ prefix, units: Math.max(1, Math.ceil(bytes / 4096)) });
        }
        return result;
      },
      { step: 'initialize', name: 'recordListQueries' },
    );
  }
}, 60_000);
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const org = () => world.demo.organization_id;

/** Calls a list and answers the reply with the read units its Queries cost and the prefixes they asked. */
async function listed(fn: string, url: string, token = pat()) {
  queries.set(fn, []);
  const reply = await world.call('GET', url, { token });
  const sent = queries.get(fn) ?? [];
  return { reply, units: sent.reduce((sum, q) => sum + q.units, 0), prefixes: sent.map((q) => q.prefix) };
}

/** Makes a list partition's count say a million more entries than it holds (one shard, as written). */
async function inflateCount(partition: ListPartition, ...owners: string[]): Promise<void> {
  // The first of the owners' list partitions that holds a count (customers: one of the 16 shards).
  let shard: Record<string, unknown> | undefined;
  for (const owner of owners) {
    const shards = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :count)',
        ExpressionAttributeValues: {
          ':pk': listKeys.partition(partition, owner),
          ':count': LIST_COUNT_PREFIX,
        },
      }),
    );
    [shard] = shards.Items ?? [];
    if (shard) break;
  }
  if (!shard) throw new Error(`${partition} ${owners.join(', ')} has no count`);
  await world.table.doc.send(
    new UpdateCommand({
      TableName: world.table.name,
      Key: { PK: shard.PK, SK: shard.SK },
      UpdateExpression: 'ADD entry_count :many',
      ExpressionAttributeValues: { ':many': 1_000_000 },
    }),
  );
}

const emoji = (n: number) => '😀'.repeat(n);
/** Metadata at every limit: 50 pairs, keys of 40 characters, values of 500, all four-byte characters. */
const maxMetadata = () =>
  Object.fromEntries(
    Array.from({ length: 50 }, (_, i) => [`${emoji(38)}${String(i).padStart(2, '0')}`, emoji(500)]),
  );

describe('a deep page is refused before any entry is read', () => {
  const cases = [
    {
      fn: 'list-customers',
      url: '/v1/customers/',
      op: 'listCustomers',
      count: () => inflateCount('customerList', ...customerListOwners([org()])),
    },
    {
      fn: 'list-products',
      url: '/v1/products/',
      op: 'listProducts',
      count: () => inflateCount('productList', ...productListOwners([org()])),
    },
    {
      fn: 'list-webhook-endpoints',
      url: '/v1/webhooks/endpoints',
      op: 'listWebhookEndpoints',
      count: () => inflateCount('webhookEndpointList', org()),
    },
    {
      fn: 'list-subscriptions',
      url: '/v1/subscriptions/',
      op: 'listSubscriptions',
      count: () => inflateCount('subscriptionList', ...subscriptionListSources(org())),
    },
    {
      fn: 'list-customer-subscriptions',
      url: '/v1/customer-portal/subscriptions/',
      op: 'listCustomerSubscriptions',
      token: () => world.demo.customer_session_token,
      count: () =>
        inflateCount(
          'subscriptionCustomerList',
          subscriptionListOwners.customer(org(), world.demo.customer_id),
        ),
    },
  ];
  for (const c of cases) {
    it(`${c.op}: page 200 at limit 100 of a list of a million is a 422 at page; only the counts are read`, async () => {
      await c.count();
      const token = c.token?.() ?? pat();
      const { reply, units, prefixes } = await listed(c.fn, `${c.url}?page=200&limit=100`, token);
      documentedReply(c.op, reply);
      expect(reply.status).toBe(422);
      expect(reply.body.detail).toEqual([
        expect.objectContaining({ loc: ['query', 'page'], msg: expect.stringContaining('earlier page') }),
      ]);
      expect(prefixes.every((prefix) => prefix.startsWith(LIST_COUNT_PREFIX))).toBe(true);
      expect(units).toBeLessThanOrEqual(LIST_READ_UNITS);
      // Page 1 of the same list is served.
      expect((await listed(c.fn, `${c.url}?limit=100`, token)).reply.status).toBe(200);
    });
  }
});

describe('large entries', () => {
  let shop: { token: string; organizationId: string };
  beforeAll(async () => {
    const { createOrganization, createUser, addMember, createPersonalAccessToken } = await import(
      '#scripts/admin/commands.ts'
    );
    const organization = await createOrganization(world.admin, { name: 'Big', defaultCurrency: 'usd' });
    const owner = await createUser(world.admin, { email: `big+${randomUUID()}@x.example` });
    await addMember(world.admin, organization.id, owner.id);
    const token = (
      await createPersonalAccessToken(world.admin, {
        userId: owner.id,
        scope:
          'customers:read customers:write products:read products:write subscriptions:read subscriptions:write',
      })
    ).token;
    shop = { token, organizationId: organization.id };
    // 20 customers at every limit: 20 × ~110 KB of entries, more than 500 read units (2,000 KB).
    for (let i = 0; i < 20; i++) {
      const reply = await world.call('POST', '/v1/customers/', {
        token,
        body: {
          email: `${emoji(300)}${String(i).padStart(2, '0')}@example.com`,
          name: `big ${emoji(252)}`,
          external_id: `${String(i).padStart(2, '0')}${emoji(254)}`,
          metadata: maxMetadata(),
        },
      });
      expect(reply.status).toBe(201);
    }
  }, 240_000);

  it('the largest customer entry is within ENTRY_BYTES and the largest customer within CUSTOMER_ITEM_BYTES (what the bound assumes)', async () => {
    // Every entry of every field of every shard: the name, e-mail and external id entries hold the longest keys.
    const all = (
      await Promise.all(
        customerListOwners([shop.organizationId]).map((owner) =>
          world.table.doc.send(
            new QueryCommand({
              TableName: world.table.name,
              KeyConditionExpression: 'PK = :pk',
              ExpressionAttributeValues: { ':pk': listKeys.partition(customerListing.partition, owner) },
            }),
          ),
        ),
      )
    ).flatMap((found) => found.Items ?? []);
    const ids = all
      .filter((entry) => String(entry.SK).startsWith('created_at#'))
      .map((entry) => String(entry.id));
    expect(ids).toHaveLength(20);
    const largestEntry = Math.max(...all.filter((entry) => entry.entity === 'customer_entry').map(itemBytes));
    expect(largestEntry).toBeLessThanOrEqual(ENTRY_BYTES.customerList.max);
    const records = await Promise.all(
      ids
        .slice(0, 3)
        .map((id) =>
          world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.customer(id) })),
        ),
    );
    const largest = Math.max(...records.map((found) => itemBytes(found.Item ?? {})));
    expect(largest).toBeGreaterThan(100 * 1024);
    expect(largest).toBeLessThanOrEqual(CUSTOMER_ITEM_BYTES);
    // A slim entry is a few attributes: a hundredth of its record.
    expect(largestEntry).toBeLessThan(largest / 20);
  });

  it('List Customers at limit 100: a 422 at limit, having read at most 500 read units', async () => {
    const { reply, units } = await listed('list-customers', '/v1/customers/?limit=100', shop.token);
    documentedReply('listCustomers', reply);
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toEqual([
      expect.objectContaining({ loc: ['query', 'limit'], msg: expect.stringContaining('smaller limit') }),
    ]);
    expect(units).toBeLessThanOrEqual(LIST_READ_UNITS);
    const small = await listed('list-customers', '/v1/customers/?limit=5', shop.token);
    expect(small.reply.status).toBe(200);
    expect(small.reply.body.items).toHaveLength(5);
  });

  it('List Customers with query matching them all: the matches are read from slim entries, the page from its records, within 500 read units', async () => {
    const { reply, units, prefixes } = await listed(
      'list-customers',
      '/v1/customers/?query=big&limit=5',
      shop.token,
    );
    documentedReply('listCustomers', reply);
    expect(reply.status).toBe(200);
    expect(reply.body.items).toHaveLength(5);
    expect(prefixes).toContain('records');
    expect(units).toBeLessThanOrEqual(LIST_READ_UNITS);
    // More records than the budget holds: a 422 at limit, still within it.
    const wide = await listed('list-customers', '/v1/customers/?query=big&limit=100', shop.token);
    documentedReply('listCustomers', wide.reply);
    expect(wide.reply.status).toBe(422);
    expect(wide.reply.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'limit'] })]);
    expect(wide.units).toBeLessThanOrEqual(LIST_READ_UNITS);
  });

  it('18 subscriptions at every limit (≈ 350 KB each as answered): List Subscriptions at limit 100 is a 422 at limit, never an answer past 6 MB', async () => {
    const customer = await world.call('GET', '/v1/customers/?limit=1', { token: shop.token });
    const customerId = customer.body.items[0].id as string;
    const product = await world.call('POST', '/v1/products/', {
      token: shop.token,
      body: {
        name: emoji(64),
        description: emoji(5000),
        recurring_interval: 'month',
        metadata: maxMetadata(),
        prices: [{ amount_type: 'free' }],
      },
    });
    expect(product.status).toBe(201);
    for (let i = 0; i < 18; i++) {
      const created = await world.call('POST', '/v1/subscriptions/', {
        token: shop.token,
        body: { product_id: product.body.id, customer_id: customerId, metadata: maxMetadata() },
      });
      expect(created.status).toBe(201);
      if (i === 0) {
        const stored = await world.table.doc.send(
          new GetCommand({ TableName: world.table.name, Key: keys.subscription(created.body.id) }),
        );
        // What the bound assumes of a page's records (shared/data/subscriptions.ts).
        expect(itemBytes(stored.Item ?? {})).toBeGreaterThan(100 * 1024);
        expect(itemBytes(stored.Item ?? {})).toBeLessThanOrEqual(SUBSCRIPTION_ITEM_BYTES);
      }
    }
    const { reply, units } = await listed('list-subscriptions', '/v1/subscriptions/?limit=100', shop.token);
    documentedReply('listSubscriptions', reply);
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'limit'] })]);
    expect(units).toBeLessThanOrEqual(LIST_READ_UNITS);
    const half = await listed('list-subscriptions', '/v1/subscriptions/?limit=8', shop.token);
    expect(half.reply.status).toBe(200);
    expect(answerBytes(half.reply.body)).toBeLessThan(MAX_ANSWER_BYTES);
  }, 240_000);
});
