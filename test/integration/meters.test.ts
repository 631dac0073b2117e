/**
 * Create, List, Get and Update Meter against DynamoDB Local under the functions' deployed policies:
 * the definition's rules (operators, aggregations, bounds), the unit's rules, the freeze of a meter
 * that has billed an event, the list kept in step, tenant safety, round trips, and the
 * `meter.created` / `meter.updated` events written with each change.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createPersonalAccessToken, createUser } from '#scripts/admin/commands.ts';
import { itemBytes } from '#shared/data/item-size.ts';
import { ENTRY_BYTES } from '#shared/data/listing.ts';
import { getMeter, MAX_ARCHIVED_PERIODS, meterListing } from '#shared/data/meters.ts';
import { keys, listKeys } from '#shared/data/table.ts';
import { MAX_FILTER_CLAUSES } from '#shared/domain/meter.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { documentedReply } from '../support/contract.ts';
import { outboxOf, typesOf } from '../support/outbox.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
let bothOrgsPat: string;
let readerPat: string;
beforeAll(async () => {
  world = await createWorld('meters');
  const { admin, demo } = world;
  const both = await createUser(admin, { email: `both+${randomUUID()}@x.example` });
  await addMember(admin, demo.organization_id, both.id);
  await addMember(admin, demo.other_organization.organization_id, both.id);
  bothOrgsPat = (await createPersonalAccessToken(admin, { userId: both.id, scope: ALL_SCOPES.join(' ') }))
    .token;
  const reader = await createUser(admin, { email: `reader+${randomUUID()}@x.example` });
  await addMember(admin, demo.organization_id, reader.id);
  readerPat = (await createPersonalAccessToken(admin, { userId: reader.id, scope: 'meters:read' })).token;
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const create = (body: unknown, token = pat()) =>
  world.call('POST', '/v1/meters/', { token, body }).then((r) => documentedReply('createMeter', r));
const list = (query = '', token = pat()) =>
  world
    .call('GET', `/v1/meters/${query ? `?${query}` : ''}`, { token })
    .then((r) => documentedReply('listMeters', r));
const get = (id: string, token = pat()) =>
  world.call('GET', `/v1/meters/${id}`, { token }).then((r) => documentedReply('getMeter', r));
const update = (id: string, body: unknown, token = pat()) =>
  world.call('PATCH', `/v1/meters/${id}`, { token, body }).then((r) => documentedReply('updateMeter', r));

const COUNT_CALLS = {
  filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: 'api.call' }] },
  aggregation: { func: 'count' },
};
const meterBody = (over: Record<string, unknown> = {}) => ({
  name: `Meter ${randomUUID()}`,
  ...COUNT_CALLS,
  ...over,
});

async function created(body: unknown = meterBody()): Promise<Reply['body']> {
  const reply = await create(body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

/** The 422 body of a meter rule. */
const rule = (loc: string[], msg: string, input: unknown, type = 'value_error') => ({
  error: 'PolarRequestValidationError',
  detail: [{ loc, msg, type, input }],
});

/** A meter of the other demo organization, created by its own member. */
async function theirMeter(): Promise<Reply['body']> {
  const reply = await create(meterBody(), world.demo.other_organization.personal_access_token);
  expect(reply.status).toBe(201);
  return reply.body;
}

/** Marks the meter billed, as the usage consumer will (operator access). */
const markBilled = (id: string) =>
  world.table.doc.send(
    new UpdateCommand({
      TableName: world.table.name,
      Key: keys.meter(id),
      UpdateExpression: 'SET last_billed_event_id = :e',
      ExpressionAttributeValues: { ':e': randomUUID() },
    }),
  );

describe('POST /v1/meters/', () => {
  it('creates a meter (201) in 2 round trips; metadata. prefixes removed; its meter.created event carries the answer', async () => {
    world.resetCount();
    const reply = await create({
      name: 'Tokens',
      filter: {
        conjunction: 'or',
        clauses: [
          { property: 'metadata.model', operator: 'like', value: 'gpt' },
          { conjunction: 'and', clauses: [{ property: 'timestamp', operator: 'gte', value: 1_700_000_000 }] },
        ],
      },
      aggregation: { func: 'sum', property: 'metadata.tokens' },
      metadata: { team: 'ml' },
    });
    expect(reply.status).toBe(201);
    expect(world.roundTrips()).toBe(2);
    expect(reply.body).toMatchObject({
      name: 'Tokens',
      unit: 'scalar',
      custom_label: null,
      custom_multiplier: null,
      organization_id: world.demo.organization_id,
      archived_at: null,
      modified_at: null,
      metadata: { team: 'ml' },
      filter: {
        conjunction: 'or',
        clauses: [
          { property: 'model', operator: 'like', value: 'gpt' },
          { conjunction: 'and', clauses: [{ property: 'timestamp', operator: 'gte', value: 1_700_000_000 }] },
        ],
      },
      aggregation: { func: 'sum', property: 'tokens' },
    });
    expect(reply.body).not.toHaveProperty('last_billed_event_id');
    const events = await outboxOf(world.table, 'meter', reply.body.id);
    expect(typesOf(events)).toEqual(['meter.created']);
    expect(events[0]?.envelope.data).toEqual(reply.body);
    expect((await get(reply.body.id)).body).toEqual(reply.body);
  });

  it('a custom unit needs its label; another unit refuses one', async () => {
    const custom = await created(
      meterBody({ unit: 'custom', custom_label: 'request', custom_multiplier: 1000 }),
    );
    expect(custom).toMatchObject({ unit: 'custom', custom_label: 'request', custom_multiplier: 1000 });
    expect((await create(meterBody({ unit: 'custom' }))).body).toEqual(
      rule(['body', 'custom_label'], "custom_label is required when unit is 'custom'.", null),
    );
    expect((await create(meterBody({ unit: 'token', custom_label: 'x' }))).body).toEqual(
      rule(
        ['body', 'custom_label'],
        "custom_label and custom_multiplier are only allowed when unit is 'custom'.",
        'x',
      ),
    );
  });

  it('refuses unknown operators, aggregations and malformed definitions (422), writing nothing', async () => {
    const before = (await list('limit=100')).body.pagination.total_count;
    const bad = [
      meterBody({
        filter: { conjunction: 'and', clauses: [{ property: 'a', operator: 'contains', value: 'x' }] },
      }),
      meterBody({ filter: { conjunction: 'xor', clauses: [] } }),
      meterBody({
        filter: { conjunction: 'and', clauses: [{ property: 'a', operator: 'eq', value: { x: 1 } }] },
      }),
      meterBody({
        filter: { conjunction: 'and', clauses: [{ property: 'a', operator: 'eq', value: 2 ** 31 }] },
      }),
      meterBody({ aggregation: { func: 'median', property: 'a' } }),
      meterBody({ aggregation: { func: 'sum' } }),
      meterBody({ aggregation: { property: 'a' } }),
      meterBody({ aggregation: {} }),
      meterBody({ name: 'ab' }),
    ];
    for (const body of bad) {
      const reply = await create(body);
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
    }
    let deep: unknown = { conjunction: 'and', clauses: [] };
    for (let i = 0; i < 5; i++) deep = { conjunction: 'or', clauses: [deep] };
    const tooDeep = await create(meterBody({ filter: deep }));
    expect(tooDeep.status).toBe(422);
    expect(tooDeep.body.detail[0].msg).toBe('A filter nests at most 5 levels deep.');
    const wide = {
      conjunction: 'and',
      clauses: Array.from({ length: 3 }, () => ({
        conjunction: 'or',
        clauses: Array.from({ length: 20 }, () => ({ property: 'x', operator: 'eq', value: 1 })),
      })),
    };
    const tooWide = await create(meterBody({ filter: wide }));
    expect(tooWide.body).toEqual(
      rule(['body', 'filter'], `A filter has at most ${MAX_FILTER_CLAUSES} clauses.`, 60),
    );
    const big = {
      conjunction: 'and',
      clauses: Array.from({ length: 20 }, () => ({ property: 'x', operator: 'eq', value: 'é'.repeat(1000) })),
    };
    const tooBig = await create(meterBody({ filter: big }));
    expect(tooBig.status).toBe(422);
    expect(tooBig.body.detail[0].loc).toEqual(['body', 'filter']);
    const empty = await create(meterBody({ aggregation: { func: 'unique', property: 'metadata.' } }));
    expect(empty.body.detail[0].loc).toEqual(['body', 'aggregation', 'property']);
    expect((await list('limit=100')).body.pagination.total_count).toBe(before);
  });

  it('with a user in two organizations, organization_id picks one (422 without it); a foreign one is a 422', async () => {
    const other = world.demo.other_organization.organization_id;
    const there = await create({ ...meterBody(), organization_id: other }, bothOrgsPat);
    expect(there.status).toBe(201);
    expect(there.body.organization_id).toBe(other);
    expect((await create(meterBody(), bothOrgsPat)).status).toBe(422);
    const foreign = await create({ ...meterBody(), organization_id: other });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error).toBe('PolarRequestValidationError');
  });

  it('meters:read may read but not create (403)', async () => {
    expect((await create(meterBody(), readerPat)).status).toBe(403);
    expect((await list('', readerPat)).status).toBe(200);
  });
});

describe('GET /v1/meters/ and /v1/meters/{id}', () => {
  it('lists by name by default, newest first on request, archived ones in their own view, names by prefix', async () => {
    const tag = randomUUID().slice(0, 8);
    const b = await created(meterBody({ name: `zz ${tag} Bravo` }));
    const a = await created(meterBody({ name: `zz ${tag} alpha` }));
    const c = await created(meterBody({ name: `zz ${tag} Charlie` }));
    expect((await update(c.id, { is_archived: true })).status).toBe(200);
    const byName = (await list(`query=zz ${tag}&limit=100`)).body;
    expect(byName.items.map((m: { id: string }) => m.id)).toEqual([a.id, b.id, c.id]);
    const newest = (await list(`query=zz ${tag}&sorting=-created_at`)).body;
    expect(newest.items.map((m: { id: string }) => m.id)).toEqual([c.id, a.id, b.id]);
    const live = (await list(`query=zz ${tag}&is_archived=false`)).body;
    expect(live.items.map((m: { id: string }) => m.id)).toEqual([a.id, b.id]);
    const archived = (await list(`query=zz ${tag}&is_archived=true`)).body;
    expect(archived.items.map((m: { id: string }) => m.id)).toEqual([c.id]);
    expect(archived.pagination).toEqual({ total_count: 1, max_page: 1 });
  });

  it("lists only the caller's organizations; another organization's id contributes nothing", async () => {
    const theirs = await theirMeter();
    const all = (await list('limit=100')).body.items.map((m: { id: string }) => m.id);
    expect(all).not.toContain(theirs.id);
    const named = await list(`organization_id=${world.demo.other_organization.organization_id}`);
    expect(named.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
  });

  it('metadata filters and unknown sortings are 422s', async () => {
    expect((await list('metadata[team]=ml')).body.detail[0].loc).toEqual(['query', 'metadata']);
    expect((await list('sorting=unit')).body.detail[0].loc).toEqual(['query', 'sorting', '0']);
  });

  it("Get: another organization's meter and an unknown id are the same 404", async () => {
    const theirs = await theirMeter();
    const foreign = await get(theirs.id);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual((await get(randomUUID())).body);
    expect((await get(theirs.id, world.demo.other_organization.personal_access_token)).status).toBe(200);
  });
});

describe('PATCH /v1/meters/{id}', () => {
  it('renames, archives and unarchives, each with its meter.updated event; a body that changes nothing writes nothing', async () => {
    const meter = await created();
    world.resetCount();
    const renamed = await update(meter.id, { name: 'Renamed meter', metadata: { a: 1 } });
    expect(renamed.status).toBe(200);
    // The token, the meter (strongly consistent), the transaction.
    expect(world.roundTrips()).toBe(3);
    expect(renamed.body).toMatchObject({ name: 'Renamed meter', metadata: { a: 1 }, archived_at: null });
    expect(renamed.body.modified_at).not.toBeNull();
    const archived = await update(meter.id, { is_archived: true });
    expect(archived.body.archived_at).not.toBeNull();
    const again = await update(meter.id, { is_archived: true, name: null });
    expect(again.body).toEqual(archived.body);
    const unarchived = await update(meter.id, { is_archived: false });
    expect(unarchived.body.archived_at).toBeNull();
    const events = await outboxOf(world.table, 'meter', meter.id);
    expect(typesOf(events)).toEqual(['meter.created', 'meter.updated', 'meter.updated', 'meter.updated']);
    expect(events.at(-1)?.envelope.data).toEqual(unarchived.body);
  });

  it('changes filter and aggregation until the meter has billed an event; then both are frozen (422 forbidden), even as null', async () => {
    const meter = await created();
    const redefined = await update(meter.id, {
      filter: { conjunction: 'and', clauses: [{ property: 'metadata.route', operator: 'eq', value: '/v1' }] },
      aggregation: { func: 'max', property: 'latency' },
    });
    expect(redefined.body).toMatchObject({
      filter: { conjunction: 'and', clauses: [{ property: 'route', operator: 'eq', value: '/v1' }] },
      aggregation: { func: 'max', property: 'latency' },
    });
    await markBilled(meter.id);
    const frozen = await update(meter.id, { filter: { conjunction: 'or', clauses: [] }, aggregation: null });
    const msg = "This field can't be updated because the meter is already aggregating events.";
    expect(frozen.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [
        { loc: ['body', 'filter'], msg, type: 'forbidden', input: { conjunction: 'or', clauses: [] } },
        { loc: ['body', 'aggregation'], msg, type: 'forbidden', input: null },
      ],
    });
    expect((await get(meter.id)).body).toEqual(redefined.body);
    // Everything else still changes.
    const renamed = await update(meter.id, { name: 'Still renamable', is_archived: true });
    expect(renamed.status).toBe(200);
    expect(renamed.body.aggregation).toEqual({ func: 'max', property: 'latency' });
  });

  it('a unit other than custom drops the custom label; custom without a label is refused', async () => {
    const meter = await created(meterBody({ unit: 'custom', custom_label: 'request' }));
    expect((await update(meter.id, { unit: 'token' })).body).toMatchObject({
      unit: 'token',
      custom_label: null,
    });
    expect((await update(meter.id, { unit: 'custom' })).status).toBe(422);
  });

  it("another organization's meter and an unknown id are the same 404; theirs stays unchanged", async () => {
    const theirs = await theirMeter();
    const taken = await update(theirs.id, { name: 'taken over', is_archived: true });
    expect(taken.status).toBe(404);
    expect(taken.body).toEqual((await update(randomUUID(), { name: 'nobody' })).body);
    const still = await get(theirs.id, world.demo.other_organization.personal_access_token);
    expect(still.body).toEqual(theirs);
    expect(typesOf(await outboxOf(world.table, 'meter', theirs.id))).toEqual(['meter.created']);
  });

  it('concurrent updates of one meter all succeed, each applied on the fresh meter', async () => {
    const meter = await created();
    const replies = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        update(meter.id, { metadata: { [`k${i}`]: i }, name: `Name ${i}` }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const events = await outboxOf(world.table, 'meter', meter.id);
    expect(events).toHaveLength(5);
  });

  it('an unarchive keeps the archive it ends (the last 20), which the answers do not show', async () => {
    const meter = await created();
    const stamps: { archived: string; unarchived: string }[] = [];
    for (let i = 0; i < MAX_ARCHIVED_PERIODS + 1; i++) {
      const archived = await update(meter.id, { is_archived: true });
      expect(archived.status).toBe(200);
      const unarchived = await update(meter.id, { is_archived: false });
      expect(unarchived.status).toBe(200);
      expect(unarchived.body).not.toHaveProperty('archived_periods');
      expect(unarchived.body.archived_at).toBeNull();
      stamps.push({ archived: archived.body.archived_at, unarchived: unarchived.body.modified_at });
    }
    const stored = await getMeter(world.table, meter.id);
    // The oldest dropped; each period from the archive's `archived_at` to the unarchive.
    expect(stored?.archived_periods).toEqual(
      stamps.slice(1).map(({ archived, unarchived }) => ({ from: archived, to: unarchived })),
    );
    const fetched = await get(meter.id);
    expect(fetched.body).not.toHaveProperty('archived_periods');
  });

  it('the largest meter entry is within ENTRY_BYTES (what the list read bound assumes)', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [`k${String(i).padStart(38, '0')}`, '𝄞'.repeat(500)]),
    );
    const filter = {
      conjunction: 'and',
      clauses: Array.from({ length: 14 }, () => ({
        property: 'x'.repeat(40),
        operator: 'eq',
        value: '€'.repeat(340),
      })),
    };
    const meter = await created({
      name: '𝄞'.repeat(64),
      filter,
      metadata,
      aggregation: { func: 'unique', property: '𝄞'.repeat(200) },
    });
    // With every past archive it keeps, and archived.
    for (let i = 0; i < MAX_ARCHIVED_PERIODS; i++) {
      expect((await update(meter.id, { is_archived: true })).status).toBe(200);
      expect((await update(meter.id, { is_archived: false })).status).toBe(200);
    }
    expect((await update(meter.id, { is_archived: true })).status).toBe(200);
    expect((await getMeter(world.table, meter.id))?.archived_periods).toHaveLength(MAX_ARCHIVED_PERIODS);
    const entries = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: {
          ':pk': listKeys.partition(meterListing.partition, meter.organization_id),
        },
      }),
    );
    const largest = Math.max(...(entries.Items ?? []).map(itemBytes));
    expect(largest).toBeGreaterThan(100 * 1024);
    expect(largest).toBeLessThanOrEqual(ENTRY_BYTES.meterList.max);
  });
});
