/**
 * The webhook endpoint API against DynamoDB Local under the functions' deployed policies: every rule
 * and error of Create, List, Get, Update and Reset Secret (Delete has its own file), what each
 * writes or leaves alone, the list entries kept in step, the secret sealed and bound to its endpoint,
 * the overlap after a reset, tenant safety and round trips.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createWebhookEndpoint as adminCreateEndpoint,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { webhookEndpointRecord } from '#shared/data/webhooks.ts';
import { openWith } from '#shared/domain/keyring.ts';
import { WEBHOOK_SECRET_PLACEHOLDER } from '#shared/domain/secrets.ts';
import { deliveryHeaders } from '#shared/domain/webhook-signature.ts';
import { signingSecrets } from '#shared/services/webhook-endpoints.ts';
import { documentedReply } from '../support/contract.ts';
import { listPartition } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
/** An organization of this file alone, so that its list's contents and counts are known. */
let org: { id: string; token: string; readToken: string; scopeless: string; secondOrg: string };

beforeAll(async () => {
  world = await createWorld('webhook-endpoints');
  const { admin } = world;
  const first = await createOrganization(admin, { name: 'Hooks' });
  const second = await createOrganization(admin, { name: 'Hooks Two' });
  const user = await createUser(admin, { email: `hooks-${randomUUID()}@x.example` });
  await addMember(admin, first.id, user.id);
  const token = async (scope: string) =>
    (await createPersonalAccessToken(admin, { userId: user.id, scope })).token;
  org = {
    id: first.id,
    token: await token('webhooks:write'),
    readToken: await token('webhooks:read'),
    scopeless: await token(''),
    secondOrg: second.id,
  };
});
afterAll(() => world?.drop());

const base = '/v1/webhooks/endpoints';
const create = (body: unknown, token = org.token, headers?: Record<string, string>) =>
  world.call('POST', base, { token, body, ...(headers ? { headers } : {}) });
const get = (id: string, token = org.token) => world.call('GET', `${base}/${id}`, { token });
const update = (id: string, body: unknown, token = org.token) =>
  world.call('PATCH', `${base}/${id}`, { token, body });
const reset = (id: string, token = org.token, query = '') =>
  world.call('PATCH', `${base}/${id}/secret${query}`, { token });
const list = (query = '', token = org.token) => world.call('GET', `${base}${query}`, { token });

const stored = async (id: string) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: keys.webhookEndpoint(id), ConsistentRead: true }),
    )
  ).Item as Record<string, unknown>;
const listCount = async (organizationId: string) =>
  (await listPartition(world.table, 'webhookEndpointList', organizationId)).count;
/** The list entries of one endpoint: one per sort field while it lives. */
const entriesOf = async (organizationId: string, id: string) =>
  (await listPartition(world.table, 'webhookEndpointList', organizationId)).entries.filter(
    (entry) => entry.id === id,
  );

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const valid = { url: 'https://hooks.example.com/polar', format: 'raw', events: ['customer.created'] };

describe('POST /v1/webhooks/endpoints', () => {
  it('creates an endpoint (201) with a whsec_ secret, in 2 round trips; the table holds it sealed and listed', async () => {
    const before = await listCount(org.id);
    world.resetCount();
    const reply = documentedReply(
      'createWebhookEndpoint',
      await create({
        url: '  https://Hooks.Example.COM:443/polar?x=1  ',
        name: 'Orders',
        format: 'slack',
        events: ['subscription.created', 'customer.created', 'subscription.created'],
      }),
    );
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(201);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.body).toEqual({
      id: expect.any(String),
      created_at: expect.stringMatching(/Z$/),
      modified_at: null,
      url: 'https://hooks.example.com/polar?x=1',
      name: 'Orders',
      api_version: '2026-10',
      format: 'slack',
      secret: expect.stringMatching(SECRET),
      organization_id: org.id,
      events: ['subscription.created', 'customer.created'],
      enabled: true,
      uses_standard_webhook_signature: true,
      disabled_reason: null,
      failure_count: 0,
    });
    expect(Buffer.from(reply.body.secret.slice(6), 'base64')).toHaveLength(32);

    const item = await stored(reply.body.id);
    expect(JSON.stringify(item)).not.toContain(reply.body.secret.slice(6));
    expect(item.secret_ciphertext).toMatch(/^k1\.[A-Za-z0-9_-]+$/);
    // Bound to its endpoint: another id cannot open it.
    const { keyring } = world.admin.webhooks;
    expect(await openWith(keyring, item.secret_ciphertext as string, reply.body.id)).toBe(reply.body.secret);
    await expect(openWith(keyring, item.secret_ciphertext as string, randomUUID())).rejects.toThrow();
    // Listed in the same write: one entry per sort field, each sealed as well, and the count.
    const entries = await entriesOf(org.id, reply.body.id);
    expect(entries.map((entry) => String(entry.SK).split('#')[0]).sort()).toEqual([
      'created_at',
      'name',
      'url',
    ]);
    for (const entry of entries) expect(entry.secret_ciphertext).toBe(item.secret_ciphertext);
    expect(await listCount(org.id)).toBe(before + 1);

    world.resetCount();
    const read = documentedReply('getWebhookEndpoint', await get(reply.body.id));
    expect(world.roundTrips()).toBe(2);
    expect(read.body).toEqual(reply.body);
  });

  it.each(
    [
      ['http://hooks.example.com/x', 'url_scheme'],
      ['ftp://hooks.example.com/x', 'url_scheme'],
      ['not a url', 'url_parsing'],
      ['https:hooks.example.com', 'url_parsing'],
      ['https://user:pass@hooks.example.com/', 'value_error'],
      ['https://localhost/x', 'value_error'],
      ['https://api.localhost/x', 'value_error'],
      ['https://127.0.0.1/x', 'value_error'],
      ['https://2130706433/x', 'value_error'],
      ['https://0x7f.1/x', 'value_error'],
      ['https://10.1.2.3/x', 'value_error'],
      ['https://169.254.169.254/latest/meta-data', 'value_error'],
      ['https://100.64.0.1/', 'value_error'],
      ['https://[::1]/', 'value_error'],
      ['https://[::ffff:10.0.0.1]/', 'value_error'],
      ['https://[fd00:ec2::254]/', 'value_error'],
      ['https://intranet/', 'value_error'],
      ['https://metadata.google.internal/', 'value_error'],
      ['https://exa_mple.com/', 'value_error'],
      // 2083 code points as sent, 2090 once the host is punycode: the stored form is what counts.
      [`https://münchen.de/${'a'.repeat(2064)}`, 'url_too_long'],
      [`https://example.com/${'a'.repeat(2064)}`, 'string_too_long'],
    ].map(([url = '', type = '']) => [
      url.length > 60 ? `${url.slice(0, 30)}… (${[...url].length} code points)` : url,
      url,
      type,
    ]),
  )('refuses %s (422 at body.url, %s and writes nothing)', async (_label, url, type) => {
    const before = await listCount(org.id);
    const reply = documentedReply('createWebhookEndpoint', await create({ ...valid, url }));
    expect(reply.status).toBe(422);
    expect(reply.body.error).toBe('RequestValidationError');
    expect(reply.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'url'], type, msg: expect.any(String) }),
    ]);
    expect(await listCount(org.id)).toBe(before);
  });

  it('refuses a port other than 443 and 80 with a 422 at body.url, on create and update', async () => {
    const refused = documentedReply(
      'createWebhookEndpoint',
      await create({ ...valid, url: 'https://hooks.example.com:6379/' }),
    );
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toEqual([
      {
        loc: ['body', 'url'],
        msg: 'Webhook URLs can only use port 443 or 80.',
        type: 'value_error',
        input: 'https://hooks.example.com:6379/',
      },
    ]);
    const { body: created } = await create({ ...valid, url: 'https://hooks.example.com:80/' });
    expect(created.url).toBe('https://hooks.example.com:80/');
    const moved = await update(created.id, { url: 'https://hooks.example.com:8443/' });
    expect(moved.status).toBe(422);
    expect(moved.body.detail[0]).toMatchObject({ loc: ['body', 'url'], type: 'value_error' });
  });

  it('refuses loopback URLs unless the local allowance is given (off by default, as deployed)', async () => {
    const loopback = { ...valid, url: 'http://127.0.0.1:9999/hooks' };
    expect((await create(loopback)).status).toBe(422);
    expect(world.admin.webhooks.addresses.allowLoopback).toBe(false);
    const local = {
      ...world.admin,
      webhooks: { ...world.admin.webhooks, addresses: { allowLoopback: true } },
    };
    const { endpoint } = await adminCreateEndpoint(local, { organizationId: org.id, url: loopback.url });
    expect(endpoint.url).toBe('http://127.0.0.1:9999/hooks');
    // Loopback only: private addresses stay refused even locally.
    await expect(
      adminCreateEndpoint(local, { organizationId: org.id, url: 'http://10.0.0.1/' }),
    ).rejects.toThrow(/RequestValidationError/);
  });

  it('refuses bodies that do not match the schema, and organizations not the caller’s', async () => {
    for (const body of [
      {},
      { ...valid, url: undefined },
      { ...valid, format: 'xml' },
      { ...valid, format: undefined },
      { ...valid, events: undefined },
      { ...valid, events: ['order.shipped'] },
      { ...valid, name: '' },
      { ...valid, name: 'bell\u0007' },
      { ...valid, url: 'https://hooks.example.com/\u0000' },
    ]) {
      const reply = documentedReply('createWebhookEndpoint', await create(body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
    }
    const foreign = documentedReply(
      'createWebhookEndpoint',
      await create({ ...valid, organization_id: world.demo.other_organization.organization_id }),
    );
    expect(foreign.status).toBe(422);
    expect(foreign.body.detail[0]).toMatchObject({
      loc: ['body', 'organization_id'],
      msg: 'Organization does not exist.',
      type: 'value_error',
    });
  });

  it('needs webhooks:write; honours Idempotency-Key (the same endpoint and secret, created once)', async () => {
    expect((await create(valid, org.readToken)).status).toBe(403);
    expect((await create(valid, org.scopeless)).status).toBe(403);
    const before = await listCount(org.id);
    const key = `hooks-${randomUUID()}`;
    const first = await create(valid, org.token, { 'idempotency-key': key });
    const again = await create(valid, org.token, { 'idempotency-key': key });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(await listCount(org.id)).toBe(before + 1);
  });
});

describe('GET /v1/webhooks/endpoints/{id}', () => {
  it('another organization’s endpoint, a deleted one and an unknown id are the same 404', async () => {
    const unknown = await get(randomUUID());
    expect(unknown.status).toBe(404);
    const foreign = await get(
      world.demo.other_organization.webhook_endpoint_id,
      world.demo.personal_access_token,
    );
    expect(foreign.body).toEqual(unknown.body);
    const { body } = await create(valid);
    expect((await world.call('DELETE', `${base}/${body.id}`, { token: org.token })).status).toBe(204);
    expect((await get(body.id)).body).toEqual(unknown.body);
    expect((await get('not-a-uuid')).status).toBe(422);
    expect((await get(body.id, org.scopeless)).status).toBe(403);
  });
});

describe('the signing secret goes to writers only', () => {
  it('webhooks:read reads the placeholder on get and list; webhooks:write reads the secret', async () => {
    const { body: created } = await create(valid);
    expect(created.secret).toMatch(SECRET);
    const readerGet = documentedReply('getWebhookEndpoint', await get(created.id, org.readToken));
    expect(readerGet.status).toBe(200);
    expect(readerGet.body).toEqual({ ...created, secret: WEBHOOK_SECRET_PLACEHOLDER });
    const readerList = documentedReply('listWebhookEndpoints', await list('?limit=100', org.readToken));
    const secrets = readerList.body.items.map((item: { secret: string }) => item.secret);
    expect(secrets.length).toBeGreaterThan(0);
    expect(new Set(secrets)).toEqual(new Set([WEBHOOK_SECRET_PLACEHOLDER]));
    expect(JSON.stringify(readerList.body)).not.toContain(created.secret.slice('whsec_'.length));
    // The writer still reads it, as on the hosted service.
    expect((await get(created.id)).body.secret).toBe(created.secret);
    const writerList = await list('?limit=100');
    expect(writerList.body.items.find((item: { id: string }) => item.id === created.id).secret).toBe(
      created.secret,
    );
  });

  it('the placeholder has the shape of a secret and is no key: no base64 decoder accepts it', () => {
    expect(WEBHOOK_SECRET_PLACEHOLDER).toMatch(/^whsec_\*{44}$/);
    expect(() => new Webhook(WEBHOOK_SECRET_PLACEHOLDER)).toThrow();
  });
});

describe('GET /v1/webhooks/endpoints', () => {
  /** A second organization of the same user, with endpoints of its own. */
  let listed: {
    id: string;
    name: string | null;
    url: string;
    created_at: string;
    organization_id: string;
    secret: string;
  }[];
  let listToken: string;

  beforeAll(async () => {
    const { admin } = world;
    const a = await createOrganization(admin, { name: 'List A' });
    const b = await createOrganization(admin, { name: 'List B' });
    const user = await createUser(admin, { email: `list-${randomUUID()}@x.example` });
    await addMember(admin, a.id, user.id);
    await addMember(admin, b.id, user.id);
    listToken = (await createPersonalAccessToken(admin, { userId: user.id, scope: 'webhooks:write' })).token;
    const names = ['beta', 'Alpha', null, 'gamma', 'alpha', null, 'Zeta'];
    listed = [];
    for (const [i, name] of names.entries()) {
      const reply = await create(
        {
          url: `https://h${(i * 7) % 5}.example.com/${i}`,
          name,
          format: 'raw',
          events: [],
          organization_id: i % 3 === 0 ? b.id : a.id,
        },
        listToken,
      );
      expect(reply.status).toBe(201);
      listed.push(reply.body);
    }
  });

  const ids = (reply: Reply) => reply.body.items.map((item: { id: string }) => item.id);
  const lower = (value: string | null) => (value === null ? null : value.toLowerCase());
  const byField =
    (field: 'name' | 'url' | 'created_at', descending: boolean) =>
    (x: (typeof listed)[0], y: (typeof listed)[0]) => {
      const [a, b] = [lower(x[field]), lower(y[field])];
      // No name is the greatest value: last ascending, first descending.
      if (a !== b) return (a === null ? 1 : b === null ? -1 : a < b ? -1 : 1) * (descending ? -1 : 1);
      return x.id < y.id ? -1 : 1;
    };

  it('pages newest first by default, across the caller’s organizations, each with its secret (3 round trips)', async () => {
    world.resetCount();
    const first = documentedReply('listWebhookEndpoints', await list('?limit=3', listToken));
    expect(world.roundTrips()).toBe(1 + 2 * 2);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.body.pagination).toEqual({ total_count: 7, max_page: 3 });
    const all = [
      ...ids(first),
      ...ids(await list('?limit=3&page=2', listToken)),
      ...ids(await list('?limit=3&page=3', listToken)),
    ];
    expect(all).toEqual([...listed].sort(byField('created_at', true)).map((e) => e.id));
    for (const item of first.body.items) {
      expect(item.secret).toBe(listed.find((e) => e.id === item.id)?.secret);
    }
    const past = await list('?limit=3&page=9', listToken);
    expect(past.body).toEqual({ items: [], pagination: { total_count: 7, max_page: 3 } });
  });

  it.each([
    ['name', false],
    ['name', true],
    ['url', false],
    ['url', true],
  ] as const)(
    'sorts by %s (descending: %s), case-insensitively, no name greatest, ties by id',
    async (field, descending) => {
      const reply = documentedReply(
        'listWebhookEndpoints',
        await list(`?sorting=${descending ? '-' : ''}${field}&limit=100`, listToken),
      );
      expect(ids(reply)).toEqual([...listed].sort(byField(field, descending)).map((e) => e.id));
    },
  );

  it('organization_id narrows the list; another organization’s id matches nothing', async () => {
    const b = listed[0]?.organization_id as string;
    const onlyB = await list(`?organization_id=${b}&limit=100`, listToken);
    expect(onlyB.body.pagination.total_count).toBe(3);
    expect(onlyB.body.items.every((item: { organization_id: string }) => item.organization_id === b)).toBe(
      true,
    );
    const foreign = await list(
      `?organization_id=${world.demo.other_organization.organization_id}`,
      listToken,
    );
    expect(foreign.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
  });

  it('clamps limit at 100, refuses bad paging and sorting values, needs a webhooks scope', async () => {
    expect((await list('?limit=1000', listToken)).body.pagination).toEqual({ total_count: 7, max_page: 1 });
    for (const query of ['?page=0', '?limit=0', '?limit=1.5', '?sorting=secret', '?organization_id=nope']) {
      const reply = documentedReply('listWebhookEndpoints', await list(query, listToken));
      expect(reply.status, query).toBe(422);
    }
    expect((await list('', org.readToken)).status).toBe(200);
    expect((await list('', org.scopeless)).status).toBe(403);
  });

  it('a deleted endpoint leaves the list and its count in the same write', async () => {
    const [gone] = listed.splice(1, 1);
    const id = gone?.id as string;
    expect((await world.call('DELETE', `${base}/${id}`, { token: listToken })).status).toBe(204);
    expect(await entriesOf(gone?.organization_id as string, id)).toEqual([]);
    const reply = await list('?limit=100', listToken);
    expect(reply.body.pagination.total_count).toBe(6);
    expect(ids(reply)).not.toContain(id);
  });
});

describe('PATCH /v1/webhooks/endpoints/{id}', () => {
  it('changes the fields given in 3 round trips and keeps the list entries in step', async () => {
    const { body: created } = await create({ ...valid, name: 'Before' });
    world.resetCount();
    const reply = documentedReply(
      'updateWebhookEndpoint',
      await update(created.id, {
        url: 'https://other.example.com/hooks',
        name: 'After',
        format: 'discord',
        events: ['product.created', 'product.created', 'product.updated'],
      }),
    );
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      url: 'https://other.example.com/hooks',
      name: 'After',
      format: 'discord',
      events: ['product.created', 'product.updated'],
      secret: created.secret,
      modified_at: expect.stringMatching(/Z$/),
    });
    const entries = await entriesOf(org.id, created.id);
    expect(entries).toHaveLength(3);
    // The name entry moved to the new name's key (lowercased, `1` = present, U+0001 ends the text).
    expect(String(entries.find((e) => String(e.SK).startsWith('name#'))?.SK)).toBe(
      `name#1after\u0001#${created.id}`,
    );
    expect(entries.every((e) => e.url === 'https://other.example.com/hooks')).toBe(true);
    expect((await stored(created.id)).revision).toBe(2);
  });

  it('name: null removes the name; a field left out or null elsewhere changes nothing; {} writes nothing', async () => {
    const { body: created } = await create({ ...valid, name: 'Named' });
    const cleared = await update(created.id, {
      name: null,
      url: null,
      format: null,
      events: null,
      enabled: null,
    });
    expect(cleared.body).toMatchObject({
      name: null,
      url: created.url,
      format: 'raw',
      events: created.events,
    });
    const item = await stored(created.id);
    world.resetCount();
    const same = documentedReply('updateWebhookEndpoint', await update(created.id, {}));
    expect(world.roundTrips()).toBe(2);
    expect(same.body).toEqual(cleared.body);
    expect(await stored(created.id)).toEqual(item);
  });

  it('disables (disabled_by_user) and enables again (reason and failure count cleared)', async () => {
    const { body: created } = await create(valid);
    const off = await update(created.id, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, disabled_reason: 'disabled_by_user' });
    await world.table.doc.send(
      new UpdateCommand({
        TableName: world.table.name,
        Key: keys.webhookEndpoint(created.id),
        UpdateExpression: 'SET failure_count = :n',
        ExpressionAttributeValues: { ':n': 4 },
      }),
    );
    const on = await update(created.id, { enabled: true });
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null, failure_count: 0 });
  });

  it('re-enabling checks the stored URL again (422 at body.enabled) unless a new URL comes with it', async () => {
    const { body: created } = await create(valid);
    await update(created.id, { enabled: false });
    // Stored under rules that no longer hold (another stack's loopback allowance, an older guard).
    await world.table.doc.send(
      new UpdateCommand({
        TableName: world.table.name,
        Key: keys.webhookEndpoint(created.id),
        UpdateExpression: 'SET #url = :url',
        ExpressionAttributeNames: { '#url': 'url' },
        ExpressionAttributeValues: { ':url': 'https://10.0.0.7/hooks' },
      }),
    );
    const before = await stored(created.id);
    const refused = documentedReply('updateWebhookEndpoint', await update(created.id, { enabled: true }));
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [
        {
          loc: ['body', 'enabled'],
          msg: 'Cannot enable a webhook endpoint with an invalid URL. Please update the URL first.',
          type: 'value_error',
          input: true,
        },
      ],
    });
    expect(await stored(created.id)).toEqual(before);
    const fixed = await update(created.id, { enabled: true, url: 'https://fixed.example.com/' });
    expect(fixed.body).toMatchObject({ enabled: true, url: 'https://fixed.example.com/' });
  });

  it('refuses a URL the guard refuses, and bad bodies, changing nothing', async () => {
    const { body: created } = await create(valid);
    const before = await stored(created.id);
    for (const body of [
      { url: 'https://192.168.1.1/' },
      { url: 'http://hooks.example.com/' },
      { format: 'xml' },
      { events: ['nope'] },
      { enabled: 'yes' },
      { name: '' },
    ]) {
      const reply = documentedReply('updateWebhookEndpoint', await update(created.id, body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
    }
    expect(await stored(created.id)).toEqual(before);
  });

  it('another organization’s endpoint is the 404 of an unknown one; webhooks:read is not enough', async () => {
    const foreign = await update(world.demo.other_organization.webhook_endpoint_id, { name: 'x' });
    const unknown = await update(randomUUID(), { name: 'x' });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    const { body: created } = await create(valid);
    expect((await update(created.id, { name: 'x' }, org.readToken)).status).toBe(403);
  });

  it('concurrent changes: each is decided on fresh data, the entries end in step with the endpoint', async () => {
    const { body: created } = await create(valid);
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        update(created.id, { name: `racer ${i}`, url: `https://r${i}.example.com/` }),
      ),
    );
    for (const reply of replies) expect([200, 409]).toContain(reply.status);
    expect(replies.some((reply) => reply.status === 200)).toBe(true);
    const item = webhookEndpointRecord(await stored(created.id));
    const entries = await entriesOf(org.id, created.id);
    expect(entries).toHaveLength(3);
    for (const entry of entries)
      expect([entry.name, entry.url, entry.revision]).toEqual([item.name, item.url, item.revision]);
  });
});

describe('PATCH /v1/webhooks/endpoints/{id}/secret', () => {
  it('issues a new secret; the replaced one keeps signing for 24 hours (3 round trips)', async () => {
    const { body: created } = await create(valid);
    world.resetCount();
    const reply = documentedReply('resetWebhookEndpointSecret', await reset(created.id));
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(200);
    expect(reply.body.secret).toMatch(SECRET);
    expect(reply.body.secret).not.toBe(created.secret);
    expect((await get(created.id)).body.secret).toBe(reply.body.secret);

    const record = webhookEndpointRecord(await stored(created.id));
    const expires = Date.parse(record.previous_secret_expires_at as string);
    expect(expires - Date.parse(record.modified_at as string)).toBe(24 * 3_600_000);
    const deps = world.depsFor('reset-webhook-endpoint-secret');
    const during = await signingSecrets(deps, record, new Date(expires - 1000));
    expect(during).toEqual([reply.body.secret, created.secret]);
    expect(await signingSecrets(deps, record, new Date(expires + 1000))).toEqual([reply.body.secret]);

    // A delivery signed during the overlap verifies under either secret, with a stock verifier.
    const payload = JSON.stringify({
      type: 'customer.created',
      timestamp: new Date().toISOString(),
      data: {},
    });
    const headers = deliveryHeaders(
      { id: 'msg_1', timestamp: Math.floor(Date.now() / 1000), payload },
      during,
    );
    for (const secret of during) expect(() => new Webhook(secret).verify(payload, headers)).not.toThrow();
  });

  it('a second reset ends the overlap of the secret it replaces; foreign and unknown ids are 404', async () => {
    const { body: created } = await create(valid);
    const first = await reset(created.id);
    const second = await reset(created.id);
    const record = webhookEndpointRecord(await stored(created.id));
    const secrets = await signingSecrets(world.depsFor('reset-webhook-endpoint-secret'), record, new Date());
    expect(secrets).toEqual([second.body.secret, first.body.secret]);
    const foreign = await reset(world.demo.other_organization.webhook_endpoint_id);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual((await reset(randomUUID())).body);
    expect((await reset(created.id, org.readToken)).status).toBe(403);
  });

  it('previous_secret_overlap_seconds=0 ends the replaced secret at once; another value sets its overlap', async () => {
    const { body: created } = await create(valid);
    const deps = world.depsFor('reset-webhook-endpoint-secret');
    const now = await reset(created.id, org.token, '?previous_secret_overlap_seconds=0');
    expect(documentedReply('resetWebhookEndpointSecret', now).status).toBe(200);
    const ended = webhookEndpointRecord(await stored(created.id));
    expect(ended.previous_secret_ciphertext).toBeNull();
    expect(ended.previous_secret_expires_at).toBeNull();
    expect(await signingSecrets(deps, ended, new Date())).toEqual([now.body.secret]);

    const hour = await reset(created.id, org.token, '?previous_secret_overlap_seconds=3600');
    const record = webhookEndpointRecord(await stored(created.id));
    const expires = Date.parse(record.previous_secret_expires_at as string);
    expect(expires - Date.parse(record.modified_at as string)).toBe(3_600_000);
    expect(await signingSecrets(deps, record, new Date(expires - 1000))).toEqual([
      hour.body.secret,
      now.body.secret,
    ]);
    for (const bad of ['-1', '86401', '1.5', 'soon', '']) {
      const refused = await reset(created.id, org.token, `?previous_secret_overlap_seconds=${bad}`);
      expect(documentedReply('resetWebhookEndpointSecret', refused).status, bad).toBe(422);
    }
    expect((await get(created.id)).body.secret).toBe(hour.body.secret);
  });
});
