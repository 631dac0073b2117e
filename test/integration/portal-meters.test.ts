/**
 * The customer portal's meters (List / Get, `/v1/customer-portal/meters/`) against DynamoDB Local
 * under the functions' deployed policies: a session sees only its own customer's customer meters
 * (another customer's, of its organization or another, is the same 404 as an unknown id and never
 * listed), the totals as Get Customer Meter folds them, the filters (`meter_id`, `query` on the
 * meter's name), sortings served and refused, paging, archived meters (left out everywhere, as the
 * hosted portal), a deleted customer's session, and the 500-read-unit bound (a 503 for one, a 422
 * at `limit` for a page, a 422 at `meter_id` past 200 meters).
 *
 * Most cases run in an organization of their own (`tenant()`), so that no other test's meter (the
 * seed's catch-all meters count every event) adds customer meters to the sets compared.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createCustomerSession,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { customerMeterId, storedCustomerMeter } from '#shared/data/customer-meters.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { MAX_PORTAL_METERS } from '#shared/services/portal-meters.ts';
import { seedCustomerMeter } from '../cards/get-customer-meter.ts';
import { seedMeter } from '../cards/get-meter.ts';
import { documentedReply } from '../support/contract.ts';
import { heavyCountHours } from '../support/heavy-hours.ts';
import { putItems } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('portal-meters');
});
afterAll(() => world?.drop());

const get = (id: string, token: string) =>
  world
    .call('GET', `/v1/customer-portal/meters/${id}`, { token })
    .then((r) => documentedReply('getPortalMeter', r));
const list = (query: string, token: string) =>
  world
    .call('GET', `/v1/customer-portal/meters/?${query}`, { token })
    .then((r) => documentedReply('listPortalMeters', r));
const ids = (reply: { body: unknown }) => (reply.body as { items: { id: string }[] }).items.map((i) => i.id);

interface Tenant {
  organizationId: string;
  pat: string;
  customers: { id: string; session: string }[];
}

/** An organization of its own: a member's PAT (meters and customer meters) and customers with sessions. */
async function tenant(customers = 2): Promise<Tenant> {
  const tag = randomUUID().slice(0, 8);
  const organization = await createOrganization(world.admin, { name: `Portal ${tag}` });
  const user = await createUser(world.admin, { email: `portal-${tag}@x.example` });
  await addMember(world.admin, organization.id, user.id);
  const { token: pat } = await createPersonalAccessToken(world.admin, {
    userId: user.id,
    scope: 'meters:write customer_meters:read customers:write',
  });
  const made: Tenant['customers'] = [];
  for (let i = 0; i < customers; i++) {
    const customer = await createCustomer(world.admin, {
      organizationId: organization.id,
      email: `c${i}-${tag}@x.example`,
    });
    const { token } = await createCustomerSession(world.admin, { customer });
    made.push({ id: customer.id, session: token });
  }
  return { organizationId: organization.id, pat, customers: made };
}

const meterIdOf = async (t: Tenant, customerMeter: string): Promise<string> =>
  (
    (await world.call('GET', `/v1/customer-meters/${customerMeter}`, { token: t.pat })).body as {
      meter_id: string;
    }
  ).meter_id;

const rename = async (t: Tenant, meterId: string, name: string) =>
  expect((await world.call('PATCH', `/v1/meters/${meterId}`, { token: t.pat, body: { name } })).status).toBe(
    200,
  );

describe('Get Portal Meter', () => {
  it('its own customer meter: the totals Get Customer Meter answers, with the meter’s summary', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const id = await seedCustomerMeter(world, t.organizationId, me.id, 3);
    const reply = await get(id, me.session);
    expect(reply.status).toBe(200);
    const organizationView = (await world.call('GET', `/v1/customer-meters/${id}`, { token: t.pat })).body;
    expect(reply.body).toEqual({
      id,
      created_at: organizationView.created_at,
      modified_at: null,
      customer_id: me.id,
      meter_id: organizationView.meter_id,
      consumed_units: 3,
      credited_units: 0,
      balance: -3,
      meter: {
        id: organizationView.meter.id,
        name: organizationView.meter.name,
        created_at: organizationView.meter.created_at,
        modified_at: organizationView.meter.modified_at,
      },
    });
    // Both spellings and either case of the id.
    expect((await get(`${id.toUpperCase()}/`, me.session)).body).toEqual(reply.body);
  });

  it('another customer’s (same organization or another), an unknown id: the same 404; the owner sees it', async () => {
    const t = await tenant(2);
    const [me, other] = t.customers as [Tenant['customers'][number], Tenant['customers'][number]];
    const theirs = await seedCustomerMeter(world, t.organizationId, other.id);
    const otherOrganization = await seedCustomerMeter(
      world,
      world.demo.organization_id,
      world.demo.customer_id,
    );
    // The same meter counted for the session's own customer would be another id: the other's id is not ours.
    for (const id of [theirs, otherOrganization, randomUUID()]) {
      const reply = await get(id, me.session);
      expect(reply.status, id).toBe(404);
      expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    }
    expect((await get(theirs, other.session)).status).toBe(200);
    expect((await get(otherOrganization, world.demo.customer_session_token)).status).toBe(200);
  });

  it('422 at path.id for a malformed id; 401 for a PAT, an expired session, a deleted customer’s session', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const id = await seedCustomerMeter(world, t.organizationId, me.id);
    const bad = await get('not-a-uuid', me.session);
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ detail: [{ loc: ['path', 'id'] }] });
    expect((await get(id, t.pat)).status).toBe(401);
    expect((await get(id, world.demo.expired_customer_session_token)).status).toBe(401);
    const deleted = await world.call('DELETE', `/v1/customers/${me.id}`, { token: t.pat });
    expect(deleted.status).toBe(204);
    expect((await get(id, me.session)).status).toBe(401);
    expect((await get(randomUUID(), me.session)).status).toBe(401);
    expect((await list('', me.session)).status).toBe(401);
  });

  it('costs four round trips: the token with the meter’s GetItem grant, the customer and customer meter in one batch, the meter, the usage', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const id = await seedCustomerMeter(world, t.organizationId, me.id);
    world.resetCount();
    expect((await get(id, me.session)).status).toBe(200);
    expect(world.roundTripsOf('get-portal-meter')).toBe(4);
  });
});

describe('List Portal Meters', () => {
  it('only its own customer’s customer meters, each as Get answers it; another customer’s never listed', async () => {
    const t = await tenant(2);
    const [me, other] = t.customers as [Tenant['customers'][number], Tenant['customers'][number]];
    const mine = [
      await seedCustomerMeter(world, t.organizationId, me.id, 1),
      await seedCustomerMeter(world, t.organizationId, me.id, 2),
    ];
    const theirs = await seedCustomerMeter(world, t.organizationId, other.id, 5);
    const page = await list('limit=100', me.session);
    expect(page.status).toBe(200);
    expect(new Set(ids(page))).toEqual(new Set(mine));
    expect(page.body).toMatchObject({ pagination: { total_count: 2, max_page: 1 } });
    for (const item of (page.body as { items: { id: string }[] }).items) {
      expect(item).toEqual((await get(item.id, me.session)).body);
    }
    expect(ids(await list('limit=100', other.session))).toEqual([theirs]);
    // The other customer's meter named in the filter: nothing, as an unknown meter.
    expect(ids(await list(`meter_id=${await meterIdOf(t, theirs)}`, me.session))).toEqual([]);
    // Another organization's customer meters are not listed either.
    await seedCustomerMeter(world, world.demo.organization_id, world.demo.customer_id);
    expect(new Set(ids(await list('limit=100', me.session)))).toEqual(new Set(mine));
    world.resetCount();
    expect((await list(`meter_id=${await meterIdOf(t, mine[0] as string)}`, me.session)).status).toBe(200);
    // The token, the organization's meters, the customer and its customer meters by key, one usage Query.
    expect(world.roundTripsOf('list-portal-meters')).toBe(4);
  });

  it('filters: meter_id (repeated), query on the meter name ignoring case, literally', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const alpha = await seedCustomerMeter(world, t.organizationId, me.id);
    const beta = await seedCustomerMeter(world, t.organizationId, me.id);
    const gamma = await seedCustomerMeter(world, t.organizationId, me.id);
    const [alphaMeter, betaMeter, gammaMeter] = [
      await meterIdOf(t, alpha),
      await meterIdOf(t, beta),
      await meterIdOf(t, gamma),
    ];
    await rename(t, alphaMeter, 'API calls');
    await rename(t, betaMeter, 'Storage GB');
    await rename(t, gammaMeter, '100% api_tokens');
    const byName = async (text: string) =>
      new Set(ids(await list(`query=${encodeURIComponent(text)}&limit=100`, me.session)));
    expect(await byName('api')).toEqual(new Set([alpha, gamma]));
    expect(await byName('STORAGE')).toEqual(new Set([beta]));
    expect(await byName('%')).toEqual(new Set([gamma]));
    expect(await byName('_')).toEqual(new Set([gamma]));
    expect(await byName('nothing like it')).toEqual(new Set());
    expect(new Set(ids(await list(`meter_id=${alphaMeter}&meter_id=${betaMeter}`, me.session)))).toEqual(
      new Set([alpha, beta]),
    );
    expect(ids(await list(`meter_id=${alphaMeter}&query=storage`, me.session))).toEqual([]);
    expect(ids(await list(`meter_id=${randomUUID()}`, me.session))).toEqual([]);
    expect((await list('meter_id=not-an-id', me.session)).status).toBe(422);
  });

  it('sortings: meter_name, meter_id and created_at order the list; the default is newest first; totals are refused (422 at sorting)', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const made: string[] = [];
    for (const name of ['bravo', 'Alpha', 'charlie']) {
      const id = await seedCustomerMeter(world, t.organizationId, me.id);
      await rename(t, await meterIdOf(t, id), name);
      made.push(id);
    }
    const items = async (query: string) =>
      (
        (await list(`${query}&limit=100`, me.session)).body as {
          items: { id: string; meter_id: string; created_at: string; meter: { name: string } }[];
        }
      ).items;
    expect((await items('sorting=meter_name')).map((i) => i.meter.name)).toEqual([
      'Alpha',
      'bravo',
      'charlie',
    ]);
    expect((await items('sorting=-meter_name')).map((i) => i.meter.name)).toEqual([
      'charlie',
      'bravo',
      'Alpha',
    ]);
    const byMeter = (await items('sorting=meter_id')).map((i) => i.meter_id);
    expect(byMeter).toEqual([...byMeter].sort());
    const created = (await items('sorting=created_at')).map((i) => i.created_at);
    expect(created).toEqual([...created].sort());
    const byDefault = (await items('')).map((i) => i.created_at);
    expect(byDefault).toEqual([...byDefault].sort().reverse());
    expect((await items('')).map((i) => i.id)).toEqual(
      (await items('sorting=-modified_at')).map((i) => i.id),
    );
    for (const sorting of ['consumed_units', '-balance', 'credited_units']) {
      const refused = await list(`sorting=${sorting}`, me.session);
      expect(refused.status, sorting).toBe(422);
      expect(refused.body, sorting).toMatchObject({
        error: 'PolarRequestValidationError',
        detail: [{ loc: ['query', 'sorting'] }],
      });
    }
    // Not a sorting of the portal's list (the organization's list has it): the schema's 422.
    for (const sorting of ['customer_name', 'customer_id', 'nonsense']) {
      expect((await list(`sorting=${sorting}`, me.session)).status, sorting).toBe(422);
    }
  });

  it('paging: every customer meter once over the pages, total_count and max_page as served; past the end empty', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const made = new Set<string>();
    for (let i = 0; i < 5; i++) made.add(await seedCustomerMeter(world, t.organizationId, me.id));
    const first = await list('limit=2', me.session);
    expect(first.body).toMatchObject({ pagination: { total_count: 5, max_page: 3 } });
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++) seen.push(...ids(await list(`limit=2&page=${page}`, me.session)));
    expect(seen).toHaveLength(5);
    expect(new Set(seen)).toEqual(made);
    const past = await list('limit=2&page=4', me.session);
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ items: [], pagination: { total_count: 5, max_page: 3 } });
    for (const bad of ['page=0', 'limit=0', 'limit=1.5'])
      expect((await list(bad, me.session)).status, bad).toBe(422);
  });

  it('an archived meter’s customer meter: left out of the list (even with meter_id) and 404 on Get; back when unarchived', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const id = await seedCustomerMeter(world, t.organizationId, me.id, 2);
    const kept = await seedCustomerMeter(world, t.organizationId, me.id);
    const meterId = await meterIdOf(t, id);
    const archive = (is_archived: boolean) =>
      world.call('PATCH', `/v1/meters/${meterId}`, { token: t.pat, body: { is_archived } });
    expect((await archive(true)).status).toBe(200);
    expect(ids(await list('limit=100', me.session))).toEqual([kept]);
    expect(ids(await list(`meter_id=${meterId}`, me.session))).toEqual([]);
    expect((await get(id, me.session)).status).toBe(404);
    // The organization still reads it by id (Get Customer Meter keeps archived meters).
    expect((await world.call('GET', `/v1/customer-meters/${id}`, { token: t.pat })).status).toBe(200);
    expect((await archive(false)).status).toBe(200);
    expect(new Set(ids(await list('limit=100', me.session)))).toEqual(new Set([id, kept]));
    expect((await get(id, me.session)).body).toMatchObject({ consumed_units: 2 });
  });
});

describe('the read bound (500 read units per request)', () => {
  /** Writes items as the operator would (batches of 25). */
  const putAll = (items: Record<string, unknown>[]): Promise<void> => putItems(world.table, items);

  it('a customer meter with more stored hours than one request reads: Get 503, a page of it 422 at limit', async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const meterId = await seedMeter(world, t.organizationId);
    const id = customerMeterId(me.id, meterId);
    const owner = { organization_id: t.organizationId, customer_id: me.id, meter_id: meterId };
    // 700 hours of about 3.5 KB each (many stream shards applied): about 2.4 MB, over 500 × 4 KB.
    const start = Date.parse('2025-01-01T00:00:00Z');
    await putAll([
      storedCustomerMeter({ id, ...owner, created_at: new Date().toISOString() }),
      ...heavyCountHours(owner, id, start),
    ]);
    expect((await get(id, me.session)).status).toBe(503);
    const page = await list('', me.session);
    expect(page.status).toBe(422);
    expect(page.body).toMatchObject({
      error: 'PolarRequestValidationError',
      detail: [{ loc: ['query', 'limit'] }],
    });
    // Within the bound, the same customer's other customer meters are served.
    const small = await seedCustomerMeter(world, t.organizationId, me.id, 2);
    const other = await list(`meter_id=${await meterIdOf(t, small)}`, me.session);
    expect(other.status).toBe(200);
    expect(other.body).toMatchObject({ items: [{ id: small, consumed_units: 2 }] });
  });

  it(`more than ${MAX_PORTAL_METERS} meters kept by the filters: a 422 at meter_id; narrowed by query or meter_id, served`, async () => {
    const t = await tenant(1);
    const [me] = t.customers as [Tenant['customers'][number]];
    const mine = await seedCustomerMeter(world, t.organizationId, me.id, 4);
    const mineMeter = await meterIdOf(t, mine);
    await rename(t, mineMeter, 'The one that counts');
    // MAX_PORTAL_METERS more meters (one of them the seeded meter's: MAX + 1 in all).
    const now = world.admin.now();
    for (let i = 0; i < MAX_PORTAL_METERS; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          storeNewMeter(
            world.admin.table,
            newMeter(
              {
                name: `Filler ${i + j}`,
                filter: {
                  conjunction: 'and',
                  clauses: [{ property: 'name', operator: 'eq', value: 'never' }],
                },
                aggregation: { func: 'count' },
              },
              t.organizationId,
              now,
            ),
          ),
        ),
      );
    }
    const refused = await list('', me.session);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      error: 'PolarRequestValidationError',
      detail: [{ loc: ['query', 'meter_id'] }],
    });
    expect(ids(await list('query=counts', me.session))).toEqual([mine]);
    expect(ids(await list(`meter_id=${mineMeter}`, me.session))).toEqual([mine]);
    // One meter archived: exactly MAX_PORTAL_METERS left, served.
    const filler = await world.call('GET', '/v1/meters/?query=Filler%2010&limit=1', { token: t.pat });
    const fillerId = (filler.body as { items: { id: string }[] }).items[0]?.id as string;
    expect(
      (await world.call('PATCH', `/v1/meters/${fillerId}`, { token: t.pat, body: { is_archived: true } }))
        .status,
    ).toBe(200);
    const served = await list('', me.session);
    expect(served.status).toBe(200);
    expect(ids(served)).toEqual([mine]);
    // Past the bound again, a deleted customer's session is still the 401 of every portal request.
    expect(
      (await world.call('PATCH', `/v1/meters/${fillerId}`, { token: t.pat, body: { is_archived: false } }))
        .status,
    ).toBe(200);
    expect((await world.call('DELETE', `/v1/customers/${me.id}`, { token: t.pat })).status).toBe(204);
    expect((await list('', me.session)).status).toBe(401);
  });
});
