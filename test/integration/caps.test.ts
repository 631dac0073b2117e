/**
 * The caps (shared/domain/limits.ts `CAPS`), through the functions under their deployed policies:
 * webhook endpoints per organization and OAuth clients per user. Each is refused at its cap with the
 * documented 403, concurrent creates at the edge never pass it, a delete makes room again, and an
 * owner whose counter is missing (data from before the counter) is counted from its live items.
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { CAPS } from '#shared/domain/limits.ts';
import { documentedReply } from '../support/contract.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('caps');
});
afterAll(() => world?.drop());

async function member(scope: string): Promise<{ organizationId: string; userId: string; token: string }> {
  const { admin } = world;
  const organization = await createOrganization(admin, { name: `Caps ${randomUUID().slice(0, 8)}` });
  const user = await createUser(admin, { email: `caps-${randomUUID()}@x.example` });
  await addMember(admin, organization.id, user.id);
  const { token } = await createPersonalAccessToken(admin, { userId: user.id, scope });
  return { organizationId: organization.id, userId: user.id, token };
}

const counter = async (kind: string, owner: string): Promise<unknown> =>
  (await world.table.doc.send(new GetCommand({ TableName: world.table.name, Key: keys.cap(kind, owner) })))
    .Item?.used;

const statuses = (replies: Reply[]) => replies.map((reply) => reply.status);

describe('webhook endpoints per organization', () => {
  const { limit, kind } = CAPS.webhookEndpoints;
  const create = (token: string, n: number) =>
    world.call('POST', '/v1/webhooks/endpoints', {
      token,
      body: { url: `https://hooks.example/${n}`, format: 'raw', events: ['customer.created'] },
    });

  it(`the ${limit + 1}th is refused with 403 LimitReached; concurrent creates at the edge never pass the cap; a delete makes room`, async () => {
    const owner = await member('webhooks:write');
    const room = 3;
    for (let n = 0; n < limit - room; n++) expect((await create(owner.token, n)).status).toBe(201);

    // Eight at once for three places: never more than three, whatever the interleaving.
    const racing = await Promise.all(Array.from({ length: 8 }, (_, n) => create(owner.token, 100 + n)));
    expect(statuses(racing).every((status) => [201, 403, 503].includes(status))).toBe(true);
    expect(statuses(racing).filter((status) => status === 201).length).toBeLessThanOrEqual(room);
    // Whatever a conflict (503) left over is taken one at a time, up to the cap and no further.
    let live = limit - room + statuses(racing).filter((status) => status === 201).length;
    const created: string[] = racing.filter((reply) => reply.status === 201).map((reply) => reply.body.id);
    for (let n = 0; live < limit; n++) {
      const reply = await create(owner.token, 200 + n);
      expect(reply.status).toBe(201);
      created.push(reply.body.id);
      live++;
    }
    const refused = documentedReply('createWebhookEndpoint', await create(owner.token, 300));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: 'LimitReached',
      detail: `At most ${limit} webhook endpoints per organization: delete one before creating another.`,
    });
    expect(await counter(kind, owner.organizationId)).toBe(limit);
    const listed = await world.call('GET', '/v1/webhooks/endpoints?limit=100', { token: owner.token });
    expect(listed.body.pagination.total_count).toBe(limit);

    const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${created[0]}`, {
      token: owner.token,
    });
    expect(deleted.status).toBe(204);
    expect(await counter(kind, owner.organizationId)).toBe(limit - 1);
    expect((await create(owner.token, 400)).status).toBe(201);
    expect((await create(owner.token, 401)).status).toBe(403);
  });

  it('an organization without a counter (endpoints from before it) is counted from its list', async () => {
    const owner = await member('webhooks:write');
    const forget = () =>
      world.table.doc.send(
        new DeleteCommand({ TableName: world.table.name, Key: keys.cap(kind, owner.organizationId) }),
      );
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push((await create(owner.token, n)).body.id);
    // Below the cap, a create and a delete each seed the counter from the list.
    await forget();
    expect((await create(owner.token, 3)).status).toBe(201);
    expect(await counter(kind, owner.organizationId)).toBe(4);
    await forget();
    const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${ids[0]}`, { token: owner.token });
    expect(deleted.status).toBe(204);
    expect(await counter(kind, owner.organizationId)).toBe(3);
    for (let n = 3; n < limit; n++) expect((await create(owner.token, 10 + n)).status).toBe(201);
    // At the cap with a counter: refused by the transaction alone (the token, then the transaction).
    world.resetCount();
    expect((await create(owner.token, 499)).status).toBe(403);
    expect(world.roundTrips()).toBe(2);
    await forget();
    expect((await create(owner.token, 500)).status).toBe(403);
    expect(await counter(kind, owner.organizationId)).toBeUndefined();
  });
});

describe('OAuth clients per user', () => {
  const { limit, kind } = CAPS.oauthClients;
  const register = (token: string, n: number) =>
    world.call('POST', '/v1/oauth2/register', {
      token,
      body: { client_name: `cap ${n}`, redirect_uris: ['https://app.example/callback'] },
    });

  it(`the ${limit + 1}th is refused with 403 limit_reached (RFC 7591 shape); concurrent registrations never pass the cap; a delete makes room`, async () => {
    const owner = await member('user:write');
    const room = 2;
    for (let n = 0; n < limit - room; n++) expect((await register(owner.token, n)).status).toBe(201);
    const racing = await Promise.all(Array.from({ length: 6 }, (_, n) => register(owner.token, 100 + n)));
    expect(statuses(racing).every((status) => [201, 403, 503].includes(status))).toBe(true);
    expect(statuses(racing).filter((status) => status === 201).length).toBeLessThanOrEqual(room);
    const registered = racing.filter((reply) => reply.status === 201).map((reply) => reply.body);
    for (let n = 0; limit - room + registered.length < limit; n++) {
      const reply = await register(owner.token, 200 + n);
      expect(reply.status).toBe(201);
      registered.push(reply.body);
    }
    const refused = documentedReply('createClient', await register(owner.token, 300));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: 'limit_reached',
      error_description: `At most ${limit} OAuth clients per user: delete one before creating another.`,
    });
    expect(await counter(kind, owner.userId)).toBe(limit);

    const first = registered[0];
    const deleted = await world.call('DELETE', `/v1/oauth2/register/${first.client_id}`, {
      token: first.registration_access_token,
    });
    expect(deleted.status).toBe(204);
    expect(await counter(kind, owner.userId)).toBe(limit - 1);
    expect((await register(owner.token, 400)).status).toBe(201);
    expect((await register(owner.token, 401)).status).toBe(403);
  });

  it('a user without a counter (clients from before it) is counted from their live clients', async () => {
    const owner = await member('user:write');
    const forget = () =>
      world.table.doc.send(
        new DeleteCommand({ TableName: world.table.name, Key: keys.cap(kind, owner.userId) }),
      );
    const clients: { client_id: string; registration_access_token: string }[] = [];
    for (let n = 0; n < 3; n++) clients.push((await register(owner.token, n)).body);
    // Below the cap, a registration and a delete each seed the counter from the live clients.
    await forget();
    expect((await register(owner.token, 3)).status).toBe(201);
    expect(await counter(kind, owner.userId)).toBe(4);
    await forget();
    const [first] = clients as [(typeof clients)[number]];
    const deleted = await world.call('DELETE', `/v1/oauth2/register/${first.client_id}`, {
      token: first.registration_access_token,
    });
    expect(deleted.status).toBe(204);
    expect(await counter(kind, owner.userId)).toBe(3);
    for (let n = 3; n < limit; n++) expect((await register(owner.token, 10 + n)).status).toBe(201);
    world.resetCount();
    expect((await register(owner.token, 499)).status).toBe(403);
    expect(world.roundTrips()).toBe(2);
    await forget();
    expect((await register(owner.token, 500)).status).toBe(403);
    expect(await counter(kind, owner.userId)).toBeUndefined();
  });
});
