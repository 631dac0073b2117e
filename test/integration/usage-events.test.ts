/**
 * Ingest Events, List Events, Get Event, List Event Names against DynamoDB Local under the
 * functions' policies: deduplication within and across batches, a retried batch, refused batches
 * storing and counting nothing, a batch failing part-way and retried whole, pages and windows
 * against a plain model, tenant isolation, round trips.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { keys, partitions } from '#shared/data/table.ts';
import { usageEventId } from '#shared/data/usage-events.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { documentedReply } from '../support/contract.ts';
import { faultError, faultyApi } from '../support/faults.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('usage-events');
});
afterAll(() => world?.drop());

const ingest = (body: unknown, token = world.demo.personal_access_token) =>
  world.call('POST', '/v1/events/ingest', { token, body });
const stored = async (organizationId: string, externalId: string) =>
  (
    await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: keys.usageEvent(usageEventId(organizationId, externalId)),
        ConsistentRead: true,
      }),
    )
  ).Item;
const usageEvents = async (organizationId: string) => {
  const items: Record<string, unknown>[] = [];
  for (let shard = 0; shard < 16; shard++) {
    const result = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        IndexName: 'GSI1',
        KeyConditionExpression: 'GSI1PK = :pk',
        ExpressionAttributeValues: { ':pk': `${partitions.usageEventList}${organizationId}#S${shard}` },
      }),
    );
    items.push(...(result.Items ?? []));
  }
  return items;
};

/** A fresh organization with one customer and a PAT of a member: its lists hold only this test's events. */
async function tenant() {
  const organization = await createOrganization(world.admin, { name: `Events ${randomUUID().slice(0, 8)}` });
  const user = await createUser(world.admin, { email: `events+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, user.id);
  const { token } = await createPersonalAccessToken(world.admin, {
    userId: user.id,
    scope: ALL_SCOPES.join(' '),
  });
  const customer = await createCustomer(world.admin, {
    organizationId: organization.id,
    email: `c+${randomUUID()}@x.example`,
  });
  return { organizationId: organization.id, token, customerId: customer.id };
}

describe('POST /v1/events/ingest', () => {
  it('stores a batch (by customer id and by external customer id) in 5 round trips; each event is got back', async () => {
    const t = await tenant();
    const [a, b] = [`a-${randomUUID()}`, `b-${randomUUID()}`];
    world.resetCount();
    const reply = documentedReply(
      'ingestEvents',
      await ingest(
        {
          events: [
            {
              name: 'api_call',
              customer_id: t.customerId.toUpperCase(),
              external_id: a,
              timestamp: '2026-01-02T03:04:05.123456+02:00',
              metadata: { tokens: 12, model: 'small', ok: true, ratio: 0.5 },
            },
            { name: 'api_call', external_customer_id: 'not-yet-a-customer', external_id: b },
          ],
        },
        t.token,
      ),
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ inserted: 2, duplicates: 0 });
    // The token, the customers named, two puts (in parallel), the name's count.
    expect(world.roundTrips()).toBe(5);
    const got = documentedReply(
      'getEvent',
      await world.call('GET', `/v1/events/${usageEventId(t.organizationId, a)}`, { token: t.token }),
    );
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id: usageEventId(t.organizationId, a),
      timestamp: '2026-01-02T01:04:05.123456Z',
      organization_id: t.organizationId,
      customer_id: t.customerId,
      customer: { id: t.customerId },
      external_customer_id: null,
      name: 'api_call',
      label: 'api_call',
      source: 'user',
      child_count: 0,
      parent_id: null,
      metadata: { tokens: 12, model: 'small', ok: true, ratio: 0.5 },
    });
    // An external customer id is not checked (as the hosted service: its customer may come later).
    const byExternal = await world.call('GET', `/v1/events/${usageEventId(t.organizationId, b)}`, {
      token: t.token,
    });
    expect(byExternal.body).toMatchObject({
      customer_id: null,
      customer: null,
      external_customer_id: 'not-yet-a-customer',
    });
  });

  it('deduplicates within a batch and across batches; a whole batch retried inserts nothing', async () => {
    const t = await tenant();
    const ids = [`d1-${randomUUID()}`, `d2-${randomUUID()}`, `d3-${randomUUID()}`];
    const event = (externalId: string, tokens: number) => ({
      name: 'dedupe',
      customer_id: t.customerId,
      external_id: externalId,
      metadata: { tokens },
    });
    const batch = {
      events: [event(ids[0] as string, 1), event(ids[1] as string, 2), event(ids[0] as string, 99)],
    };
    const first = await ingest(batch, t.token);
    expect(first.body).toEqual({ inserted: 2, duplicates: 1 });
    // The first of the batch wins.
    expect((await stored(t.organizationId, ids[0] as string))?.metadata).toBe('{"tokens":1}');
    const retried = await ingest(batch, t.token);
    expect(retried.body).toEqual({ inserted: 0, duplicates: 3 });
    const later = await ingest({ events: [event(ids[1] as string, 5), event(ids[2] as string, 3)] }, t.token);
    expect(later.body).toEqual({ inserted: 1, duplicates: 1 });
    expect(await usageEvents(t.organizationId)).toHaveLength(3);
    const names = await world.call('GET', '/v1/events/names', { token: t.token });
    expect(names.body.items).toEqual([
      expect.objectContaining({ name: 'dedupe', occurrences: 3, label: 'dedupe', source: 'user' }),
    ]);
    // The same external id in another organization is another event.
    const other = await tenant();
    expect(
      (
        await ingest(
          { events: [{ ...event(ids[0] as string, 1), customer_id: other.customerId }] },
          other.token,
        )
      ).body,
    ).toEqual({
      inserted: 1,
      duplicates: 0,
    });
  });

  it('refuses a whole batch for one invalid event, at its index, and stores and counts nothing', async () => {
    const t = await tenant();
    const other = await tenant();
    const ok = `ok-${randomUUID()}`;
    const valid = { name: 'refused', customer_id: t.customerId, external_id: ok };
    const cases: [unknown, string[], string][] = [
      [
        { name: 'refused', customer_id: t.customerId, timestamp: '2999-01-01T00:00:00Z' },
        ['timestamp'],
        'PolarRequestValidationError',
      ],
      [{ name: 'refused', customer_id: randomUUID() }, ['customer_id'], 'PolarRequestValidationError'],
      [{ name: 'refused', customer_id: other.customerId }, ['customer_id'], 'PolarRequestValidationError'],
      [{ name: 'refused' }, ['customer_id'], 'PolarRequestValidationError'],
      [
        { name: 'refused', customer_id: t.customerId, external_customer_id: 'x' },
        ['external_customer_id'],
        'PolarRequestValidationError',
      ],
      [
        { name: 'refused', customer_id: t.customerId, parent_id: 'p' },
        ['parent_id'],
        'PolarRequestValidationError',
      ],
      [
        { name: 'refused', customer_id: t.customerId, organization_id: other.organizationId },
        ['organization_id'],
        'PolarRequestValidationError',
      ],
      [
        { name: 'refused', customer_id: t.customerId, timestamp: '2020-01-01T00:00:00.0000001Z' },
        ['timestamp'],
        'PolarRequestValidationError',
      ],
      [{ name: '', customer_id: t.customerId }, ['name'], 'RequestValidationError'],
      [
        { name: 'refused', customer_id: t.customerId, metadata: { _cost: { amount: 1, currency: 'eur' } } },
        ['metadata', '_cost', 'currency'],
        'RequestValidationError',
      ],
    ];
    for (const [bad, loc, error] of cases) {
      const reply = documentedReply('ingestEvents', await ingest({ events: [valid, bad] }, t.token));
      expect(reply.status, JSON.stringify(bad)).toBe(422);
      expect(reply.body.error).toBe(error);
      expect(reply.body.detail.map((d: { loc: string[] }) => d.loc)).toContainEqual([
        'body',
        'events',
        '1',
        ...loc,
      ]);
    }
    const tooMany = documentedReply(
      'ingestEvents',
      await ingest(
        { events: Array.from({ length: 1001 }, () => ({ name: 'n', customer_id: t.customerId })) },
        t.token,
      ),
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0].loc).toEqual(['body', 'events']);
    expect(await stored(t.organizationId, ok)).toBeUndefined();
    expect(await usageEvents(t.organizationId)).toEqual([]);
    expect((await world.call('GET', '/v1/events/names', { token: t.token })).body.items).toEqual([]);
  });

  it('a batch failing part-way (a put throttled past its retries) is a 503; the whole batch retried stores each event once', async () => {
    const t = await tenant();
    const ids = [`f1-${randomUUID()}`, `f2-${randomUUID()}`, `f3-${randomUUID()}`];
    const batch = {
      events: ids.map((externalId) => ({
        name: 'faulty',
        customer_id: t.customerId,
        external_id: externalId,
      })),
    };
    const api = faultyApi(world, undefined, {
      retryDelay: 'none',
      configure: (doc) =>
        doc.middlewareStack.add(
          (next) => async (args) => {
            // The input as sent (marshalled): every attempt of that put fails, past the SDK's retries.
            const input = args.input as { Item?: { external_id?: { S?: string } } };
            if (input.Item?.external_id?.S === ids[1]) throw faultError('throttling', 'PutItemCommand');
            return next(args);
          },
          { step: 'finalizeRequest', name: 'throttleOnePut' },
        ),
    });
    try {
      const failed = documentedReply(
        'ingestEvents',
        await api.call('POST', '/v1/events/ingest', { token: t.token, body: batch }),
      );
      expect(failed.status).toBe(503);
    } finally {
      api.destroy();
    }
    // The other two are stored whole, the throttled one not at all.
    expect(await stored(t.organizationId, ids[0] as string)).toBeDefined();
    expect(await stored(t.organizationId, ids[1] as string)).toBeUndefined();
    expect(await stored(t.organizationId, ids[2] as string)).toBeDefined();
    const retried = await ingest(batch, t.token);
    expect(retried.body).toEqual({ inserted: 1, duplicates: 2 });
    expect(await usageEvents(t.organizationId)).toHaveLength(3);
    expect((await ingest(batch, t.token)).body).toEqual({ inserted: 0, duplicates: 3 });
  });

  it("an answer lost after the event's put: the SDK's retry finds this request's own event, counted inserted", async () => {
    const t = await tenant();
    const externalId = `lost-${randomUUID()}`;
    // Calls: the token, the customers, the put (its answer lost once), the name.
    const api = faultyApi(world, { kind: 'lost-response', call: 3, times: 1 }, { retryDelay: 'none' });
    try {
      const reply = await api.call('POST', '/v1/events/ingest', {
        token: t.token,
        body: { events: [{ name: 'lost', customer_id: t.customerId, external_id: externalId }] },
      });
      expect(api.injector.injections()).toBe(1);
      expect(reply.body).toEqual({ inserted: 1, duplicates: 0 });
    } finally {
      api.destroy();
    }
  });
});

describe('lost answers of the name count', () => {
  it("the SDK's retry of a name count whose answer was lost finds this request's mark: counted once", async () => {
    const t = await tenant();
    // Calls: the token, the customers, the put, the name's count (its answer lost once).
    const api = faultyApi(world, { kind: 'lost-response', call: 4, times: 1 }, { retryDelay: 'none' });
    try {
      const reply = await api.call('POST', '/v1/events/ingest', {
        token: t.token,
        body: { events: [{ name: 'counted', customer_id: t.customerId, external_id: `c-${randomUUID()}` }] },
      });
      expect(api.injector.injections()).toBe(1);
      expect(reply.body).toEqual({ inserted: 1, duplicates: 0 });
    } finally {
      api.destroy();
    }
    const names = await world.call('GET', '/v1/events/names', { token: t.token });
    expect(names.body.items).toEqual([expect.objectContaining({ name: 'counted', occurrences: 1 })]);
  });
});

describe('GET /v1/events/ and /v1/events/names', () => {
  it('pages by timestamp across the shards, in both orders, with and without a window, as a plain sort of the events', async () => {
    const t = await tenant();
    const base = Date.UTC(2026, 0, 1);
    const events = Array.from({ length: 45 }, (_, i) => ({
      name: i % 3 === 0 ? 'alpha' : 'beta',
      customer_id: t.customerId,
      external_id: `p-${i}`,
      // Some share a timestamp: ties are ordered by id.
      timestamp: new Date(base + Math.floor(i / 2) * 1000).toISOString(),
    }));
    expect((await ingest({ events }, t.token)).body).toEqual({ inserted: 45, duplicates: 0 });
    const model = events
      .map((e) => ({
        id: usageEventId(t.organizationId, e.external_id),
        at: Date.parse(e.timestamp),
        name: e.name,
      }))
      .sort((a, b) => b.at - a.at || (a.id < b.id ? -1 : 1));
    const list = async (query: string) =>
      documentedReply('listEvents', await world.call('GET', `/v1/events/${query}`, { token: t.token }));
    const walk = async (query: string, limit: number) => {
      const ids: string[] = [];
      for (let page = 1; ; page++) {
        const reply = await list(`?limit=${limit}&page=${page}${query}`);
        expect(reply.status).toBe(200);
        expect(reply.body.pagination.total_count).toBe(45);
        if (reply.body.items.length === 0) return ids;
        ids.push(...reply.body.items.map((e: { id: string }) => e.id));
      }
    };
    expect(await walk('', 7)).toEqual(model.map((e) => e.id));
    const ascending = [...model].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
    expect(await walk('&sorting=timestamp', 10)).toEqual(ascending.map((e) => e.id));
    expect(await walk('&start_timestamp=2000-01-01T00:00:00Z', 8)).toEqual(model.map((e) => e.id));
    // A window, and filters within it.
    const from = new Date(base + 5_000).toISOString();
    const to = new Date(base + 10_000).toISOString();
    const windowed = await list(`?start_timestamp=${from}&end_timestamp=${to}&name=alpha&limit=100`);
    const expected = model.filter((e) => e.at >= base + 5_000 && e.at <= base + 10_000 && e.name === 'alpha');
    expect(windowed.body.items.map((e: { id: string }) => e.id)).toEqual(expected.map((e) => e.id));
    expect(windowed.body.pagination.total_count).toBe(expected.length);
    const byCustomer = await list(
      `?start_timestamp=2000-01-01T00:00:00Z&customer_id=${t.customerId}&limit=1`,
    );
    expect(byCustomer.body.pagination.total_count).toBe(45);
    // Refused: a filter without a window, a page too deep without one, a filter no key answers.
    for (const [query, loc] of [
      [`?customer_id=${t.customerId}`, 'customer_id'],
      ['?page=11&limit=100', 'page'],
      ['?meter_id=x', 'meter_id'],
    ] as const) {
      const refused = await list(query);
      expect(refused.status, query).toBe(422);
      expect(refused.body.detail[0].loc).toEqual(['query', loc]);
    }
    const names = documentedReply(
      'listEventNames',
      await world.call('GET', '/v1/events/names?sorting=name', { token: t.token }),
    );
    expect(names.body.items).toEqual([
      {
        name: 'alpha',
        label: 'alpha',
        source: 'user',
        occurrences: 15,
        first_seen: new Date(base).toISOString(),
        last_seen: new Date(base + 21_000).toISOString(),
      },
      {
        name: 'beta',
        label: 'beta',
        source: 'user',
        occurrences: 30,
        first_seen: new Date(base).toISOString(),
        last_seen: new Date(base + 22_000).toISOString(),
      },
    ]);
    // A later batch moving the first and last timestamps widens them.
    await ingest(
      {
        events: [
          {
            name: 'alpha',
            customer_id: t.customerId,
            external_id: 'late',
            timestamp: '2025-01-01T00:00:00Z',
          },
          { name: 'alpha', customer_id: t.customerId, external_id: 'new', timestamp: '2026-02-01T00:00:00Z' },
        ],
      },
      t.token,
    );
    const widened = await world.call('GET', '/v1/events/names?query=ALP', { token: t.token });
    expect(widened.body.items).toEqual([
      expect.objectContaining({
        name: 'alpha',
        occurrences: 17,
        first_seen: '2025-01-01T00:00:00.000Z',
        last_seen: '2026-02-01T00:00:00.000Z',
      }),
    ]);
  });

  it("another organization's events are not listed, and its event is the 404 of an unknown id", async () => {
    const t = await tenant();
    const other = await tenant();
    await ingest({ events: [{ name: 'mine', customer_id: t.customerId, external_id: 'x' }] }, t.token);
    await ingest(
      { events: [{ name: 'theirs', customer_id: other.customerId, external_id: 'x' }] },
      other.token,
    );
    const listed = await world.call('GET', '/v1/events/?start_timestamp=2000-01-01T00:00:00Z', {
      token: t.token,
    });
    expect(listed.body.items.map((e: { name: string }) => e.name)).toEqual(['mine']);
    const named = await world.call('GET', `/v1/events/?organization_id=${other.organizationId}`, {
      token: t.token,
    });
    expect(named.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
    const theirs = await world.call('GET', `/v1/events/${usageEventId(other.organizationId, 'x')}`, {
      token: t.token,
    });
    const unknown = await world.call('GET', `/v1/events/${randomUUID()}`, { token: t.token });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(unknown.body);
  });
});
