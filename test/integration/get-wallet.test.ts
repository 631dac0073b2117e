import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('get-wallet');
});
afterAll(() => world?.drop());

const get = (id: string, token = world.demo.customer_session_token) =>
  world.call('GET', `/v1/customer-portal/wallets/${id}`, { token });

describe('Get Wallet (customer portal)', () => {
  it('200: the wallet, exactly as the list shows it, under both spellings and either case', async () => {
    const listed = (
      await world.call('GET', '/v1/customer-portal/wallets/?limit=100', {
        token: world.demo.customer_session_token,
      })
    ).body.items;
    expect(listed).toHaveLength(14);
    for (const wallet of listed) {
      const reply = await get(wallet.id);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual(wallet);
    }
    const top = world.demo.wallet_id;
    expect((await get(`${top}/`)).body.balance).toBe(123_456);
    expect((await get(top.toUpperCase())).body.id).toBe(top);
  });

  it("404 for another customer's wallet (same organization or not) and for an unknown id, alike", async () => {
    const theirs = (
      await world.call('GET', '/v1/customer-portal/wallets/?limit=1', {
        token: world.demo.second_customer_session_token,
      })
    ).body.items[0].id as string;
    for (const id of [theirs, '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b']) {
      const reply = await get(id);
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    }
    // The owner sees it.
    expect((await get(theirs, world.demo.second_customer_session_token)).status).toBe(200);
  });

  it('422 at path.id for a malformed id; 401 for a PAT or an expired session', async () => {
    const bad = await get('not-a-uuid');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['path', 'id']);
    expect((await get(world.demo.wallet_id, world.demo.personal_access_token)).status).toBe(401);
    expect((await get(world.demo.wallet_id, world.demo.expired_customer_session_token)).status).toBe(401);
  });

  it('a real extra segment is the route-level 404, not a wallet lookup', async () => {
    const reply = await get(`${world.demo.wallet_id}/extra`);
    expect(reply.status).toBe(404);
    expect(reply.body).toEqual({ error: 'NotFound', detail: 'Not Found' });
  });

  it('costs two round trips: the token, then one batch of the customer and the wallet', async () => {
    world.resetCount();
    expect((await get(world.demo.wallet_id)).status).toBe(200);
    expect(world.roundTrips()).toBe(2);
  });
});
