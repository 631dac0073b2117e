/**
 * Create, Get, List and Get-by-external-id Customer against DynamoDB Local under the functions'
 * deployed policies: uniqueness of e-mail and external id enforced by the database (races included),
 * list pages and filters against an independent model, tenant safety, round trips.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import {
  customerListing,
  customerListOwners,
  customerListSources,
  readCustomerEntries,
} from '#shared/data/customers.ts';
import { readRange } from '#shared/data/listing.ts';
import { keys } from '#shared/data/table.ts';
import { documentedReply } from '../support/contract.ts';
import { customerOrder } from '../support/customer-order.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('customers');
});
afterAll(() => world?.drop());

const create = (body: unknown, token = world.demo.personal_access_token, headers?: Record<string, string>) =>
  world.call('POST', '/v1/customers/', { token, body, ...(headers ? { headers } : {}) });
const get = (id: string, token = world.demo.personal_access_token) =>
  world.call('GET', `/v1/customers/${id}`, { token });
const unique = (label: string) => `${label}+${randomUUID().slice(0, 8)}@example.com`;

const documented = documentedReply;

describe('POST /v1/customers/', () => {
  it('creates an individual customer (201) in 3 round trips (token, its organization’s guard marker, the transaction); Get Customer reads it back in 2', async () => {
    const email = unique('Ada');
    world.resetCount();
    const reply = documented(
      'createCustomer',
      await create({
        email,
        name: 'Ada Lovelace',
        external_id: `crm-${randomUUID()}`,
        metadata: { tier: 'gold', seats: 3 },
      }),
    );
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      email,
      name: 'Ada Lovelace',
      type: 'individual',
      email_verified: false,
      organization_id: world.demo.organization_id,
      metadata: { tier: 'gold', seats: 3 },
      deleted_at: null,
      modified_at: null,
    });
    world.resetCount();
    const read = documented('getCustomer', await get(reply.body.id));
    expect(world.roundTrips()).toBe(2);
    expect(read.body).toEqual(reply.body);
  });

  it('an e-mail is unique per organization, case-insensitively: 422 at body.email, nothing written', async () => {
    const email = unique('Grace');
    expect((await create({ email })).status).toBe(201);
    const again = documented('createCustomer', await create({ email: email.toUpperCase() }));
    expect(again.status).toBe(422);
    expect(again.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [
        {
          loc: ['body', 'email'],
          msg: 'A customer with this email address already exists.',
          type: 'value_error',
          input: email.toUpperCase(),
        },
      ],
    });
    // Another organization may use the same address.
    const other = await create({ email }, world.demo.other_organization.personal_access_token);
    expect(other.status).toBe(201);
  });

  it('an external id is unique per organization: 422 at body.external_id', async () => {
    const externalId = `crm-${randomUUID()}`;
    expect((await create({ email: unique('a'), external_id: externalId })).status).toBe(201);
    const again = await create({ email: unique('b'), external_id: externalId });
    expect(again.status).toBe(422);
    expect(again.body.detail[0]).toMatchObject({
      loc: ['body', 'external_id'],
      msg: 'A customer with this external ID already exists.',
    });
    // Its customer was not written either: the e-mail is still free.
    const stored = await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: keys.customerEmail(world.demo.organization_id, again.body.detail[0].input),
      }),
    );
    expect(stored.Item).toBeUndefined();
  });

  it('metadata numbers DynamoDB cannot hold come back as sent (found by the fuzzer: was a 500)', async () => {
    const metadata = { tiny: 2e-323, huge: 1e300, exact: 9007199254740991, text: 'ok' };
    const reply = await create({ email: unique('numbers'), metadata });
    expect(reply.status).toBe(201);
    expect(reply.body.metadata).toEqual(metadata);
    expect((await get(reply.body.id)).body.metadata).toEqual(metadata);
  });

  it('of concurrent creates with one e-mail exactly one is a 201', async () => {
    const email = unique('race');
    const replies = await Promise.all(Array.from({ length: 8 }, () => create({ email, name: 'racer' })));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 422)).toHaveLength(7);
  });

  it('the same Idempotency-Key replays the first answer', async () => {
    const key = `customers-${randomUUID()}`;
    const body = { email: unique('idem') };
    const first = await create(body, undefined, { 'idempotency-key': key });
    const second = await create(body, undefined, { 'idempotency-key': key });
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
  });

  it('refuses what does not qualify with the contract’s 422, and needs customers:write', async () => {
    for (const body of [
      {},
      { email: 'not-an-address' },
      { email: 'a b@example.com' },
      { email: unique('team'), type: 'team' },
      { email: unique('ctl'), name: 'bell\u0007' },
      { email: unique('ext'), external_id: '' },
      { email: unique('ext'), external_id: 'tab\there' },
      { email: unique('meta'), metadata: { k: null } },
    ]) {
      const reply = documented('createCustomer', await create(body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
    }
    const foreign = await create({
      email: unique('org'),
      organization_id: world.demo.other_organization.organization_id,
    });
    expect(foreign.status).toBe(422);
    expect(foreign.body.detail[0]).toMatchObject({
      loc: ['body', 'organization_id'],
      msg: 'Organization does not exist.',
    });
    const scopeless = await create(
      { email: unique('scope') },
      world.demo.personal_access_token_without_scopes,
    );
    expect(scopeless.status).toBe(403);
  });
});

describe('GET /v1/customers/{id}', () => {
  it('another organization’s customer, a deleted one and an unknown id are the same 404', async () => {
    const unknown = await get(randomUUID());
    expect(unknown.status).toBe(404);
    const foreign = await get(world.demo.other_organization.customer_id);
    expect(foreign.body).toEqual(unknown.body);
    expect((await get(world.demo.customer_id)).body.id).toBe(world.demo.customer_id);
    expect((await get(world.demo.customer_id.toUpperCase())).status).toBe(200);
    expect((await get('not-a-uuid')).status).toBe(422);
  });
});

describe('POST /v1/customers/ writes the list entries and count in the same transaction', () => {
  it('a new customer is listed at once: one entry per sort field and its external id, counted', async () => {
    const email = unique('Listed');
    const reply = await create({ email, name: 'Listed', external_id: `ext-${randomUUID()}` });
    const entries = await Promise.all(
      ['created_at#', 'email#', 'name#', 'external_id#'].map((field) =>
        readCustomerEntries(world.table, [world.demo.organization_id], field),
      ),
    );
    const mine = entries.flat().filter((entry) => entry.id === reply.body.id);
    expect(mine).toHaveLength(4);
    // Slim entries (shared/data/listing.ts): each keeps what the order and the filters read, not the
    // customer's metadata or wallet count; the page reads the customer itself.
    for (const entry of mine) {
      expect(entry).toMatchObject({ email, name: 'Listed', external_id: reply.body.external_id });
      expect(entry).not.toHaveProperty('wallet_count');
      expect(entry).not.toHaveProperty('metadata');
    }
    const listed = await world.call('GET', `/v1/customers/?email=${encodeURIComponent(email)}`, {
      token: world.demo.personal_access_token,
    });
    expect(listed.body.items).toEqual([reply.body]);
  });

  it('an e-mail address or external id too long for a key is guarded by its hash (was a 500)', async () => {
    // Four bytes of UTF-8 each: 1212 and 1024 bytes, past a sort key's 1024 with the guard's prefix.
    const email = `${'😀'.repeat(300)}@example.com`;
    const externalId = '😀'.repeat(256);
    const first = await create({ email, external_id: externalId });
    expect(first.status).toBe(201);
    const again = await create({ email: email.toUpperCase() });
    expect(again.body.detail[0].loc).toEqual(['body', 'email']);
    const sameExternal = await create({ email: unique('long'), external_id: externalId });
    expect(sameExternal.body.detail[0].loc).toEqual(['body', 'external_id']);
    const found = await world.call('GET', `/v1/customers/external/${encodeURIComponent(externalId)}`, {
      token: world.demo.personal_access_token,
    });
    expect(found.body.id).toBe(first.body.id);
  });
});

// ---------------------------------------------------------------------------------------------
// List Customers
// ---------------------------------------------------------------------------------------------

/** An organization of its own, so that the list holds exactly what a test puts in it. */
async function freshTenant(scope = 'customers:read customers:write') {
  const organization = await createOrganization(world.admin, { name: `List ${randomUUID().slice(0, 8)}` });
  const user = await createUser(world.admin, { email: `lister+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, user.id);
  const { token } = await createPersonalAccessToken(world.admin, { userId: user.id, scope });
  return { organizationId: organization.id, token };
}

const list = (token: string, query = '') => world.call('GET', `/v1/customers/${query}`, { token });

type Listed = { id: string; created_at: string; email: string; name: string | null };

describe('GET /v1/customers/', () => {
  const names = ['bob', 'Alice', null, 'alice', 'Émile', 'zoë', 'Bob', null, 'al', 'ALICE'];
  let tenant: Awaited<ReturnType<typeof freshTenant>>;
  let created: Listed[];
  beforeAll(async () => {
    tenant = await freshTenant();
    created = [];
    // Pairs created concurrently share a millisecond now and then: ties the order breaks by id.
    for (let i = 0; i < names.length; i += 2) {
      const pair = await Promise.all(
        names.slice(i, i + 2).map((name, j) =>
          create(
            {
              email: `${['M', 'a', 'z', 'B'][(i + j) % 4]}${i + j}+${randomUUID().slice(0, 4)}@list.example`,
              name,
              external_id: `list-${i + j}`,
            },
            tenant.token,
          ),
        ),
      );
      created.push(...pair.map((reply) => reply.body));
    }
  });

  it('every page of every order is the slice of the model order; total_count and max_page', async () => {
    const orders = [
      [],
      ['created_at'],
      ['name'],
      ['-name'],
      ['email'],
      ['-email', 'name'],
      ['name', '-created_at'],
      ['-name', 'email'],
    ];
    for (const sorting of orders) {
      const expected = [...created]
        .sort(customerOrder(sorting.length > 0 ? sorting : ['-created_at']))
        .map((c) => c.id);
      for (const limit of [1, 3, 4, 10]) {
        const seen: string[] = [];
        const query = sorting.map((s) => `sorting=${s}`).join('&');
        for (let page = 1; page <= Math.ceil(names.length / limit) + 1; page++) {
          const reply = documented(
            'listCustomers',
            await list(tenant.token, `?${query}&page=${page}&limit=${limit}`),
          );
          expect(reply.status).toBe(200);
          expect(reply.body.pagination).toEqual({
            total_count: names.length,
            max_page: Math.ceil(names.length / limit),
          });
          seen.push(...reply.body.items.map((c: Listed) => c.id));
        }
        expect(seen, `${sorting.join(',')} limit ${limit}`).toEqual(expected);
      }
    }
  });

  it('a page costs the token, one batch of the counts of its 16 shards (a new organization is marked: no old partition), an entries Query per non-empty one (in parallel), and the page’s customers; past the end 2; limit above 100 is served as 100', async () => {
    // Was 4 (token, count, entries, customers) with one list partition per organization; the 16
    // shards that spread its writes are each read.
    // 17 partitions before the marker (the 16 shards and the old one); the tenant, created by this
    // release, is marked and known to the container from its earlier pages: its 16 shards only.
    const partitions = customerListOwners([tenant.organizationId]).length;
    expect(partitions).toBe(17);
    expect(await customerListSources(world.table, [tenant.organizationId])).toHaveLength(16);
    const nonEmpty = (
      await Promise.all(
        customerListOwners([tenant.organizationId]).map((owner) =>
          readRange(world.table, customerListing, owner, 'created_at#'),
        ),
      )
    ).filter((entries) => entries.length > 0).length;
    expect(nonEmpty).toBeGreaterThan(1);
    world.resetCount();
    const first = await list(tenant.token, '?limit=2');
    expect(world.roundTrips()).toBe(1 + 1 + nonEmpty + 1);
    expect(first.body.items).toHaveLength(2);
    world.resetCount();
    const past = await list(tenant.token, '?page=99');
    expect(world.roundTrips()).toBe(2);
    expect(past.body).toEqual({ items: [], pagination: { total_count: names.length, max_page: 1 } });
    const clamped = await list(tenant.token, '?limit=1000');
    expect(clamped.body.pagination.max_page).toBe(1);
    expect(clamped.body.items).toHaveLength(names.length);
  });

  it('only the caller’s organizations: another tenant sees none of these, and organization_id narrows', async () => {
    const theirs = await list(world.demo.other_organization.personal_access_token, '?limit=100');
    const ids = new Set(created.map((c) => c.id));
    expect(theirs.body.items.some((c: Listed) => ids.has(c.id))).toBe(false);
    expect(
      (await list(tenant.token, `?organization_id=${tenant.organizationId}`)).body.pagination.total_count,
    ).toBe(names.length);
    // An organization the caller is not in matches nothing, as an unknown one does.
    for (const other of [world.demo.organization_id, randomUUID()]) {
      const reply = await list(tenant.token, `?organization_id=${other}`);
      expect(reply.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
    }
  });

  it('a member of two organizations sees both lists merged in one order; organization_id picks one', async () => {
    const user = await createUser(world.admin, { email: `two+${randomUUID()}@x.example` });
    await addMember(world.admin, tenant.organizationId, user.id);
    await addMember(world.admin, world.demo.organization_id, user.id);
    const { token } = await createPersonalAccessToken(world.admin, {
      userId: user.id,
      scope: 'customers:read',
    });
    const demo = await list(world.demo.personal_access_token, '?limit=100');
    const both = await list(token, '?limit=100&sorting=email');
    expect(both.body.pagination.total_count).toBe(names.length + demo.body.pagination.total_count);
    const expected = [...created, ...demo.body.items].sort(customerOrder(['email'])).map((c) => c.id);
    expect(both.body.items.map((c: Listed) => c.id)).toEqual(expected.slice(0, 100));
    const one = await list(token, `?organization_id=${tenant.organizationId}`);
    expect(one.body.pagination.total_count).toBe(names.length);
  });

  it('email: the exact address, case-insensitively, from its guard (3 round trips: token, guard, customer)', async () => {
    const target = created[3] as Listed;
    world.resetCount();
    const reply = await list(tenant.token, `?email=${encodeURIComponent(target.email.toUpperCase())}`);
    expect(world.roundTrips()).toBe(3);
    expect(reply.body.items.map((c: Listed) => c.id)).toEqual([target.id]);
    expect(reply.body.pagination).toEqual({ total_count: 1, max_page: 1 });
    // A prefix of an address is no address.
    expect((await list(tenant.token, `?email=${target.email.slice(0, 3)}`)).body.items).toEqual([]);
  });

  it('query: a prefix of the name or e-mail address, or the exact external id, sorted and paged', async () => {
    const ids = (reply: { body: { items: Listed[] } }) => reply.body.items.map((c) => c.id).sort();
    const byModel = (match: (c: Listed & { external_id: string }) => boolean) =>
      created
        .filter((c) => match(c as Listed & { external_id: string }))
        .map((c) => c.id)
        .sort();
    world.resetCount();
    const al = await list(tenant.token, '?query=AL&limit=100');
    // Token, then one range each: names, e-mail addresses, external ids, in each of the 16 shards (an
    // organization created by this release is marked `customer_lists` and known to the container
    // from its earlier pages: no old partition; 17 before the marker; was 3 ranges of one partition:
    // 5); then the page's customers.
    expect(world.roundTrips()).toBe(1 + 3 * 16 + 1);
    expect(ids(al)).toEqual(byModel((c) => c.name?.toLowerCase().startsWith('al') === true));
    expect(ids(await list(tenant.token, '?query=b&limit=100'))).toEqual(
      byModel((c) => /^b/i.test(c.name ?? '') || /^b/i.test(c.email)),
    );
    expect(ids(await list(tenant.token, '?query=list-4'))).toEqual(
      byModel((c) => c.external_id === 'list-4'),
    );
    // External ids match exactly: a prefix or another case is nothing.
    expect((await list(tenant.token, '?query=list-')).body.items).toEqual([]);
    expect((await list(tenant.token, '?query=LIST-4')).body.items).toEqual([]);
    // Sorted and paged like the whole list.
    const sorted = await list(tenant.token, '?query=a&sorting=-name&limit=2&page=2');
    const all = created
      .filter((c) => /^a/i.test(c.name ?? '') || /^a/i.test(c.email))
      .sort(customerOrder(['-name']));
    expect(sorted.body.items.map((c: Listed) => c.id)).toEqual(all.slice(2, 4).map((c) => c.id));
    expect(sorted.body.pagination).toEqual({ total_count: all.length, max_page: Math.ceil(all.length / 2) });
    // Both filters: the address, if the query also matches it.
    const address = encodeURIComponent((created[0] as Listed).email);
    expect(
      (await list(tenant.token, `?email=${address}&query=${address.slice(0, 2)}`)).body.items,
    ).toHaveLength(1);
    expect((await list(tenant.token, `?email=${address}&query=nothing-like-it`)).body.items).toEqual([]);
  });

  it('a filter’s cost is its matches: one customer among many is found by reading its range only', async () => {
    const reads: number[] = [];
    const probe = await freshTenant();
    for (let i = 0; i < 30; i++) await create({ email: `crowd${i}@x.example`, name: 'Crowd' }, probe.token);
    await create({ email: 'needle@x.example', name: 'Needle' }, probe.token);
    world.resetCount();
    const reply = await list(probe.token, '?query=needle');
    reads.push(world.roundTrips());
    expect(reply.body.pagination.total_count).toBe(1);
    // Token, the organization's list marker (its first page in this container), the three ranges of
    // each of the 16 shards (no old partition: a new organization is marked), the one customer (was
    // 1 + 3 × 17 + 1 before the marker; 5 with one partition).
    expect(reads).toEqual([1 + 1 + 3 * 16 + 1]);
  });

  it('refuses what it cannot answer honestly, and bad parameters, with the contract’s 422', async () => {
    const active = documented('listCustomers', await list(tenant.token, '?active=true'));
    expect(active.status).toBe(422);
    expect(active.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [
        {
          loc: ['query', 'active'],
          msg: 'Filtering customers by active subscriptions is not supported.',
          type: 'value_error',
          input: true,
        },
      ],
    });
    const metadata = await list(tenant.token, '?metadata[plan]=pro&metadata[plan]=team');
    expect(metadata.body.detail[0]).toMatchObject({
      loc: ['query', 'metadata'],
      input: { plan: ['pro', 'team'] },
    });
    for (const [query, loc] of [
      ['?page=0', ['query', 'page']],
      ['?limit=1.5', ['query', 'limit']],
      ['?sorting=name&sorting=balance', ['query', 'sorting', '1']],
      ['?organization_id=nope', ['query', 'organization_id', '0']],
      ['?query=', ['query', 'query']],
      ['?active=yes', ['query', 'active']],
    ] as const) {
      const reply = documented('listCustomers', await list(tenant.token, query));
      expect(reply.status, query).toBe(422);
      expect(reply.body.detail[0].loc, query).toEqual(loc);
    }
  });

  it('customers:read is enough; a token without it is a 403; a customer session a 401', async () => {
    const reader = await freshTenant('customers:read');
    expect((await list(reader.token)).status).toBe(200);
    expect((await list(world.demo.personal_access_token_without_scopes)).status).toBe(403);
    expect((await list(world.demo.customer_session_token)).status).toBe(401);
  });
});

// ---------------------------------------------------------------------------------------------
// Get Customer by external id
// ---------------------------------------------------------------------------------------------

const getExternal = (externalId: string, token = world.demo.personal_access_token) =>
  world.call('GET', `/v1/customers/external/${encodeURIComponent(externalId)}`, { token });

describe('GET /v1/customers/external/{external_id}', () => {
  it('the customer whose external id it is, exactly (3 round trips: token, range, customer); any characters, URL-encoded', async () => {
    world.resetCount();
    const demo = documented('getCustomerExternal', await getExternal(world.demo.customer_external_id));
    expect(world.roundTrips()).toBe(3);
    expect(demo.body).toEqual((await get(world.demo.customer_id)).body);
    for (const externalId of ['with space', 'a/b', 'a%2Fb', '50% off?&x=1#frag', 'üñí©ødé 😀', 'external']) {
      const made = await create({ email: unique('ext'), external_id: externalId });
      expect(made.status, externalId).toBe(201);
      const found = await getExternal(externalId);
      expect(found.body.id, externalId).toBe(made.body.id);
    }
    expect(
      (
        await world.call('GET', `/v1/customers/external/${world.demo.customer_external_id}/`, {
          token: world.demo.personal_access_token,
        })
      ).body.id,
    ).toBe(world.demo.customer_id);
  });

  it('another case, an unknown, another organization’s, a deleted and an empty external id: the same 404', async () => {
    const unknown = documented('getCustomerExternal', await getExternal(`nobody-${randomUUID()}`));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    const foreignId = `theirs-${randomUUID()}`;
    await create(
      { email: unique('theirs'), external_id: foreignId },
      world.demo.other_organization.personal_access_token,
    );
    const gone = `gone-${randomUUID()}`;
    const doomed = await create({ email: unique('gone'), external_id: gone });
    await world.call('DELETE', `/v1/customers/${doomed.body.id}`, {
      token: world.demo.personal_access_token,
    });
    for (const externalId of [world.demo.customer_external_id.toUpperCase(), foreignId, gone]) {
      expect((await getExternal(externalId)).body, externalId).toEqual(unknown.body);
    }
    // `/v1/customers/external/` and `/v1/customers/external` reach Get Customer's route: not an id, the 404.
    for (const path of ['/v1/customers/external/', '/v1/customers/external']) {
      const reply = await world.call('GET', path, { token: world.demo.personal_access_token });
      expect(reply.body, path).toEqual(unknown.body);
    }
  });

  it('409 AmbiguousExternalCustomerID when it names customers in two of the caller’s organizations', async () => {
    const user = await createUser(world.admin, { email: `both+${randomUUID()}@x.example` });
    await addMember(world.admin, world.demo.organization_id, user.id);
    await addMember(world.admin, world.demo.other_organization.organization_id, user.id);
    const { token } = await createPersonalAccessToken(world.admin, {
      userId: user.id,
      scope: 'customers:read',
    });
    const shared = `shared-${randomUUID()}`;
    await create({ email: unique('one'), external_id: shared });
    await create(
      { email: unique('two'), external_id: shared },
      world.demo.other_organization.personal_access_token,
    );
    const reply = documented('getCustomerExternal', await getExternal(shared, token));
    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('AmbiguousExternalCustomerID');
    // Each member of one of them finds its own.
    expect((await getExternal(shared)).status).toBe(200);
  });

  it('an extra segment is the route-level 404; no scope a 403', async () => {
    const extra = await world.call('GET', '/v1/customers/external/a/b', {
      token: world.demo.personal_access_token,
    });
    expect(extra.body).toEqual({ error: 'NotFound', detail: 'Not Found' });
    expect((await getExternal('x', world.demo.personal_access_token_without_scopes)).status).toBe(403);
  });
});
