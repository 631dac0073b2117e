import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProduct } from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { softDelete } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('get-by-id');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;

describe('Get Product', () => {
  const get = (id: string, token = pat()) => world.call('GET', `/v1/products/${id}`, { token });

  it('200: the product with its prices, under both spellings and either case; archived ones too', async () => {
    const reply = await get(world.demo.free_product_id);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: world.demo.free_product_id,
      organization_id: world.demo.organization_id,
      is_recurring: true,
      is_archived: false,
      prices: [expect.objectContaining({ amount_type: 'fixed', price_amount: 0 })],
    });
    expect((await get(`${world.demo.free_product_id.toUpperCase()}/`)).body).toEqual(reply.body);
    expect((await get(world.demo.archived_product_id)).body.is_archived).toBe(true);
  });

  it("404 for another organization's, a deleted or an unknown product, alike; 403 without a products scope", async () => {
    const gone = await createProduct(world.admin, {
      organizationId: world.demo.organization_id,
      name: 'Gone',
      recurringInterval: 'month',
      priceAmount: 0,
      currency: 'usd',
    });
    await softDelete(world.table, keys.product(gone.id));
    for (const id of [
      world.demo.other_organization.free_product_id,
      gone.id,
      '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b',
    ]) {
      const reply = await get(id);
      expect(reply.status, id).toBe(404);
      expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    }
    expect(
      (await get(world.demo.free_product_id, world.demo.personal_access_token_without_scopes)).status,
    ).toBe(403);
    expect((await get('nope')).status).toBe(422);
  });

  it('costs two round trips', async () => {
    world.resetCount();
    await get(world.demo.free_product_id);
    expect(world.roundTrips()).toBe(2);
  });
});

describe('Get Subscription', () => {
  const get = (id: string, token = pat()) => world.call('GET', `/v1/subscriptions/${id}`, { token });

  it('200: what Create Subscription answered, metadata included', async () => {
    const created = await world.call('POST', '/v1/subscriptions/', {
      token: pat(),
      body: {
        product_id: world.demo.free_product_id,
        customer_id: world.demo.second_customer_id,
        metadata: { plan: 'gold', seats: 3, trial: false, ratio: 0.5 },
      },
    });
    expect(created.status).toBe(201);
    const reply = await get(created.body.id);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(created.body);
    expect((await get(`${created.body.id}/`)).status).toBe(200);
  });

  it("404 for another organization's or an unknown subscription, alike; 403 without a subscriptions scope", async () => {
    const other = world.demo.other_organization;
    const theirs = await world.call('POST', '/v1/subscriptions/', {
      token: other.personal_access_token,
      body: { product_id: other.free_product_id, customer_id: other.customer_id },
    });
    for (const id of [theirs.body.id as string, '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b']) {
      const reply = await get(id);
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    }
    expect((await get(theirs.body.id, other.personal_access_token)).status).toBe(200);
    expect(
      (await get(world.demo.subscription_id, world.demo.personal_access_token_without_scopes)).status,
    ).toBe(403);
  });

  it('costs three round trips: the token, the subscription, one batch of its customer and product', async () => {
    world.resetCount();
    expect((await get(world.demo.subscription_id)).status).toBe(200);
    expect(world.roundTrips()).toBe(3);
  });
});
