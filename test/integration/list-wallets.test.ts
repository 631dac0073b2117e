import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, createCustomerSession, createWallet } from '#scripts/admin/commands.ts';
import { comparator, parseSorting, type SortingValue } from '#shared/data/wallet-order.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('list-wallets');
});
afterAll(() => world?.drop());

const PATH = '/v1/customer-portal/wallets/';
const list = (query = '', token = world.demo.customer_session_token) =>
  world.call('GET', `${PATH}${query ? `?${query}` : ''}`, { token });

interface Wallet {
  id: string;
  created_at: string;
  modified_at: string | null;
  customer_id: string;
  balance: number;
  currency: string;
}

/** Every wallet of the customer, by walking all pages (limit 100). */
async function all(token: string, sorting: string[] = []): Promise<Wallet[]> {
  const wallets: Wallet[] = [];
  const sort = sorting.map((s) => `sorting=${encodeURIComponent(s)}`).join('&');
  for (let page = 1; ; page++) {
    const reply = await list(`page=${page}&limit=100${sort ? `&${sort}` : ''}`, token);
    expect(reply.status).toBe(200);
    wallets.push(...reply.body.items);
    if (page >= reply.body.pagination.max_page) return wallets;
  }
}

describe('List Wallets', () => {
  it("returns a page of the session customer's wallets with pagination (200)", async () => {
    const reply = await list();
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.body.pagination).toEqual({ total_count: 14, max_page: 2 });
    expect(reply.body.items).toHaveLength(10);
    for (const wallet of reply.body.items as Wallet[]) {
      expect(Object.keys(wallet).sort()).toEqual([
        'balance',
        'created_at',
        'currency',
        'customer_id',
        'id',
        'modified_at',
      ]);
      expect(wallet.customer_id).toBe(world.demo.customer_id);
      expect(Number.isInteger(wallet.balance)).toBe(true);
      expect(wallet.modified_at).toBeNull();
      expect(wallet.currency).toMatch(/^[a-z]{3}$/);
    }
  });

  it('defaults to newest first', async () => {
    const items = (await list()).body.items as Wallet[];
    const times = items.map((w) => w.created_at);
    expect(times).toEqual([...times].sort().reverse());
  });

  it.each([
    [['created_at']],
    [['-created_at']],
    [['balance']],
    [['-balance']],
    [['balance', 'created_at']],
    [['balance', '-created_at']],
    [['-balance', 'created_at']],
    [['-balance', '-created_at']],
    [['created_at', '-balance']],
    [['-created_at', 'balance']],
  ])('sorts by %j with ties broken by ascending id', async (sorting) => {
    for (const token of [world.demo.customer_session_token, world.demo.large_customer_session_token]) {
      const wallets = await all(token, sorting);
      const expected = [...wallets].sort(comparator(parseSorting(sorting as SortingValue[])));
      expect(wallets.map((w) => w.id)).toEqual(expected.map((w) => w.id));
      expect(new Set(wallets.map((w) => w.id)).size).toBe(wallets.length);
    }
  });

  it('pages neither overlap nor skip, at every page size, under ties', async () => {
    const everything = (await all(world.demo.large_customer_session_token, ['-balance'])).map((w) => w.id);
    expect(everything).toHaveLength(120);
    for (const limit of [1, 7, 10, 33]) {
      const walked: string[] = [];
      for (let page = 1; page <= Math.ceil(120 / limit); page++) {
        const reply = await list(
          `sorting=-balance&limit=${limit}&page=${page}`,
          world.demo.large_customer_session_token,
        );
        walked.push(...reply.body.items.map((w: Wallet) => w.id));
      }
      expect(walked).toEqual(everything);
    }
  });

  it('clamps limit above 100 to 100 and computes max_page with it', async () => {
    const reply = await list('limit=1000', world.demo.large_customer_session_token);
    expect(reply.status).toBe(200);
    expect(reply.body.items).toHaveLength(100);
    expect(reply.body.pagination).toEqual({ total_count: 120, max_page: 2 });
    const second = await list('limit=500&page=2', world.demo.large_customer_session_token);
    expect(second.body.items).toHaveLength(20);
  });

  it('answers a page past the end with no items and the same pagination', async () => {
    world.resetCount();
    const reply = await list('page=99');
    expect(reply.body).toEqual({ items: [], pagination: { total_count: 14, max_page: 2 } });
    expect(world.roundTrips()).toBe(2); // session + customer; no query
    const huge = await list('page=999999999999999');
    expect(huge.status).toBe(200);
    expect(huge.body.items).toEqual([]);
  });

  it('a customer without wallets: total 0, max_page 0', async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: 'empty@x.example',
    });
    const { token } = await createCustomerSession(world.admin, { customer });
    expect((await list('', token)).body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
  });

  it("only ever shows the session customer's wallets", async () => {
    const second = await all(world.demo.second_customer_session_token);
    expect(second.length).toBeGreaterThanOrEqual(1);
    expect(second.every((w) => w.customer_id === world.demo.second_customer_id)).toBe(true);
    const first = await all(world.demo.customer_session_token);
    expect(first.some((w) => second.some((s) => s.id === w.id))).toBe(false);
  });

  it('counts a new wallet in total_count (kept with the wallet, transactionally)', async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: 'count@x.example',
    });
    const { token } = await createCustomerSession(world.admin, { customer });
    await createWallet(world.admin, { customer, currency: 'usd', type: 'usage', balance: 1 });
    await expect(
      createWallet(world.admin, { customer, currency: 'usd', type: 'usage', balance: 2 }),
    ).rejects.toThrow();
    await createWallet(world.admin, { customer, currency: 'usd', type: 'billing', balance: 3 });
    expect((await list('', token)).body.pagination).toEqual({ total_count: 2, max_page: 1 });
  });

  it("refuses a wallet in a currency the API does not know: the slot bounds wallets only over the API's currencies", async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: 'currency@x.example',
    });
    await expect(
      createWallet(world.admin, { customer, currency: 'xyz', type: 'usage', balance: 1 }),
    ).rejects.toThrow(/not a currency of the API/);
  });

  it('costs at most 3 DynamoDB round trips for page 1, authentication included', async () => {
    for (const sorting of [
      '',
      'sorting=balance&sorting=-created_at',
      'sorting=-balance&sorting=created_at',
    ]) {
      world.resetCount();
      expect((await list(sorting, world.demo.large_customer_session_token)).status).toBe(200);
      expect(world.roundTrips(), sorting).toBeLessThanOrEqual(3);
    }
  });
});

describe('List Wallets: query validation (422)', () => {
  it.each([
    ['page=0', ['query', 'page'], 'greater_than_equal'],
    ['page=-1', ['query', 'page'], 'greater_than_equal'],
    ['page=abc', ['query', 'page'], 'int_parsing'],
    ['page=1.5', ['query', 'page'], 'int_parsing'],
    ['limit=0', ['query', 'limit'], 'greater_than_equal'],
    ['limit=x', ['query', 'limit'], 'int_parsing'],
    ['page=1e2', ['query', 'page'], 'int_parsing'],
    ['page=0x10', ['query', 'page'], 'int_parsing'],
    ['limit=2.0', ['query', 'limit'], 'int_parsing'],
    ['limit=Infinity', ['query', 'limit'], 'int_parsing'],
    ['sorting=foo', ['query', 'sorting', '0'], 'enum'],
    ['sorting=balance&sorting=id', ['query', 'sorting', '1'], 'enum'],
  ])('%s', async (query, loc, type) => {
    const reply = await list(query);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toBe('RequestValidationError');
    expect(reply.body.detail).toEqual([expect.objectContaining({ loc, type })]);
  });

  it('reports every faulty parameter', async () => {
    const reply = await list('page=0&limit=abc&sorting=nope');
    expect(reply.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([
      ['query', 'page'],
      ['query', 'limit'],
      ['query', 'sorting', '0'],
    ]);
  });
});
