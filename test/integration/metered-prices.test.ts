/**
 * Metered prices (`metered_unit`) on Create and Update Product against DynamoDB Local under the
 * functions' policies: the price as products and subscriptions show it, the rules (recurring
 * products, a live meter of the product's organization, a unit amount the hosted service would
 * store, a fixed price in the same currency), and what Create Subscription does with such a product.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getMeters, MeterArchivedMeanwhile } from '#shared/data/meters.ts';
import type { CreateProductBody } from '#shared/generated/api-types.ts';
import { newProduct, storeNewProduct } from '#shared/services/create-product.ts';
import { documentedReply } from '../support/contract.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('metered');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const call = (
  operationId: string,
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  body?: unknown,
  token = pat(),
) =>
  world
    .call(method, path, { token, ...(body === undefined ? {} : { body }) })
    .then((reply) => documentedReply(operationId, reply));
const createProduct = (body: unknown) => call('createProduct', 'POST', '/v1/products/', body);
const updateProduct = (id: string, body: unknown) =>
  call('updateProduct', 'PATCH', `/v1/products/${id}`, body);

async function meter(over: Record<string, unknown> = {}, token = pat()): Promise<Reply['body']> {
  const reply = await call(
    'createMeter',
    'POST',
    '/v1/meters/',
    {
      name: `Calls ${randomUUID().slice(0, 8)}`,
      filter: { conjunction: 'and', clauses: [] },
      aggregation: { func: 'count' },
      ...over,
    },
    token,
  );
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

const monthly = (prices: unknown[]) => ({
  name: `Usage ${randomUUID()}`,
  recurring_interval: 'month',
  prices,
});
const fixed0 = { amount_type: 'fixed', price_amount: 0 };
const metered = (meterId: string, over: Record<string, unknown> = {}) => ({
  amount_type: 'metered_unit',
  unit_amount: '0.5',
  meter_id: meterId,
  ...over,
});

/** The 422 body of one catalogue rule. */
const rule = (loc: string[], msg: string, input: unknown) => ({
  error: 'PolarRequestValidationError',
  detail: [{ loc, msg, type: 'value_error', input }],
});

describe('metered prices on Create Product', () => {
  it('a fixed price and metered prices: shown with unit_amount as canonical text, the cap, the meter; Get and List agree', async () => {
    const calls = await meter({ unit: 'custom', custom_label: 'call', custom_multiplier: 1000 });
    const tokens = await meter();
    const reply = await createProduct(
      monthly([
        metered(calls.id, { unit_amount: '0.500', cap_amount: 10_000 }),
        fixed0,
        metered(tokens.id.toUpperCase(), { unit_amount: 0.0001 }),
      ]),
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const prices = reply.body.prices;
    // The fixed price first (the one the product sorts by), then the metered ones as sent.
    expect(prices.map((p: { amount_type: string }) => p.amount_type)).toEqual([
      'fixed',
      'metered_unit',
      'metered_unit',
    ]);
    expect(prices[1]).toMatchObject({
      amount_type: 'metered_unit',
      unit_amount: '0.5',
      cap_amount: 10_000,
      meter_id: calls.id,
      meter: {
        id: calls.id,
        name: calls.name,
        unit: 'custom',
        custom_label: 'call',
        custom_multiplier: 1000,
      },
      price_currency: 'usd',
      is_archived: false,
      type: 'recurring',
      legacy: false,
    });
    expect(prices[1]).not.toHaveProperty('price_amount');
    expect(prices[2]).toMatchObject({ unit_amount: '0.0001', cap_amount: null, meter_id: tokens.id });
    const got = await call('getProduct', 'GET', `/v1/products/${reply.body.id}`);
    expect(got.body).toEqual(reply.body);
    const listed = await call(
      'listProducts',
      'GET',
      `/v1/products/?query=${encodeURIComponent(reply.body.name)}`,
    );
    expect(listed.body.items).toEqual([reply.body]);
  });

  it('refuses a one-time product, an unknown or foreign meter, an archived meter, bad unit amounts, a metered price alone', async () => {
    const mine = await meter();
    const archived = await meter();
    expect(
      (await call('updateMeter', 'PATCH', `/v1/meters/${archived.id}`, { is_archived: true })).status,
    ).toBe(200);
    const theirs = await meter({}, world.demo.other_organization.personal_access_token);
    const unknown = randomUUID();

    const oneTime = await createProduct({ name: 'Once', prices: [fixed0, metered(mine.id)] });
    expect(oneTime.body).toEqual(
      rule(
        ['body', 'prices', '1'],
        'Metered pricing is not supported on one-time products.',
        metered(mine.id),
      ),
    );
    for (const id of [unknown, theirs.id]) {
      expect((await createProduct(monthly([fixed0, metered(id)]))).body).toEqual(
        rule(['body', 'prices', '1', 'meter_id'], 'Meter does not exist.', id),
      );
    }
    expect((await createProduct(monthly([fixed0, metered(archived.id)]))).body).toEqual(
      rule(['body', 'prices', '1', 'meter_id'], 'Meter is archived.', archived.id),
    );
    for (const amount of ['0', '-1', '1e3', 'abc', '0.0000000000001', '100000', 0, -2]) {
      const reply = await createProduct(monthly([fixed0, metered(mine.id, { unit_amount: amount })]));
      expect(reply.status, String(amount)).toBe(422);
      expect(reply.body.detail[0].loc).toEqual(['body', 'prices', '1', 'unit_amount']);
    }
    expect(
      (await createProduct(monthly([metered(mine.id)]))).body.detail.map((d: { msg: string }) => d.msg),
    ).toEqual([
      'A metered price needs a fixed price in its currency (0 for none).',
      "The organization's default presentment currency must be present in the prices.",
    ]);
    const capped = await createProduct(monthly([fixed0, metered(mine.id, { cap_amount: -1 })]));
    expect(capped.body.error).toBe('RequestValidationError');
  });
});

describe('metered prices on Update Product, and Create Subscription', () => {
  it('adds, keeps and archives metered prices; the product.updated event shows them', async () => {
    const m = await meter();
    const created = await createProduct(monthly([fixed0]));
    const [fixed] = created.body.prices;
    const added = await updateProduct(created.body.id, {
      prices: [{ id: fixed.id }, metered(m.id, { unit_amount: '12.25' })],
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const [, price] = added.body.prices;
    expect(price).toMatchObject({ amount_type: 'metered_unit', unit_amount: '12.25', meter_id: m.id });
    const kept = await updateProduct(created.body.id, {
      prices: [{ id: fixed.id }, { id: price.id }],
      name: 'Renamed',
    });
    expect(kept.body.prices).toEqual(added.body.prices);
    const dropped = await updateProduct(created.body.id, { prices: [{ id: fixed.id }] });
    expect(dropped.body.prices.map((p: { id: string }) => p.id)).toEqual([fixed.id]);
    const unknown = await updateProduct(created.body.id, {
      prices: [{ id: fixed.id }, metered(randomUUID())],
    });
    expect(unknown.body.detail[0]).toMatchObject({
      loc: ['body', 'prices', '1', 'meter_id'],
      msg: 'Meter does not exist.',
    });
  });

  it('Create Subscription takes a free product with metered prices (the hosted service subscribes to it) and refuses one whose fixed price is not 0', async () => {
    const m = await meter();
    const product = await createProduct(monthly([fixed0, metered(m.id)]));
    const reply = await call('createSubscription', 'POST', '/v1/subscriptions/', {
      product_id: product.body.id,
      customer_id: world.demo.customer_id,
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    // It holds both prices; its answer carries Get Subscription's meters (subscription-meters.test.ts).
    expect(reply.body.prices.map((p: { id: string }) => p.id)).toEqual(
      product.body.prices.map((p: { id: string }) => p.id),
    );
    const got = await call('getSubscription', 'GET', `/v1/subscriptions/${reply.body.id}`);
    expect(got.body.meters).toMatchObject([{ meter_id: m.id, consumed_units: 0, amount: 0 }]);
    expect(reply.body.meters).toEqual(got.body.meters);
    const paid = await createProduct(monthly([{ amount_type: 'fixed', price_amount: 500 }, metered(m.id)]));
    const refused = await call('createSubscription', 'POST', '/v1/subscriptions/', {
      product_id: paid.body.id,
      customer_id: world.demo.customer_id,
    });
    expect(refused.body).toEqual(
      rule(
        ['body', 'product_id'],
        'Product is not free. The customer should go through a checkout to create a paid subscription.',
        paid.body.id,
      ),
    );
    // Once the metered price is archived, a new subscription holds the fixed price alone.
    const fixed = product.body.prices[0];
    expect((await updateProduct(product.body.id, { prices: [{ id: fixed.id }] })).status).toBe(200);
    const again = await call('createSubscription', 'POST', '/v1/subscriptions/', {
      product_id: product.body.id,
      customer_id: world.demo.customer_id,
    });
    expect(again.status).toBe(201);
    expect(again.body.meters).toEqual([]);
    expect(again.body.prices.map((p: { amount_type: string }) => p.amount_type)).toEqual(['fixed']);
    // The subscription embeds the product as it is: its archived metered price is not shown.
    expect(again.body.product.prices.map((p: { amount_type: string }) => p.amount_type)).toEqual(['fixed']);
    // The first subscription still holds the archived metered price: its meter stays shown.
    const first = await call('getSubscription', 'GET', `/v1/subscriptions/${reply.body.id}`);
    expect(first.body.meters).toMatchObject([{ meter_id: m.id }]);
  });
});

describe('archiving a meter that products price', () => {
  const updateMeter = (id: string, body: unknown) => call('updateMeter', 'PATCH', `/v1/meters/${id}`, body);
  const refused = {
    error: 'PolarRequestValidationError',
    detail: [
      {
        loc: ['body', 'is_archived'],
        msg: 'Cannot archive meter that is still attached to active products',
        type: 'value_error',
        input: true,
      },
    ],
  };

  it('is refused while a live product prices it (422 at is_archived, as the hosted service), then allowed once none does', async () => {
    const m = await meter();
    const a = await createProduct(monthly([fixed0, metered(m.id), metered(m.id, { unit_amount: '2' })]));
    const b = await createProduct(monthly([fixed0, metered(m.id)]));
    expect([a.status, b.status]).toEqual([201, 201]);
    expect((await updateMeter(m.id, { is_archived: true })).body).toEqual(refused);
    // A priced its meter twice and counts once: archiving A leaves B pricing it.
    expect((await updateProduct(a.body.id, { is_archived: true })).status).toBe(200);
    expect((await updateMeter(m.id, { is_archived: true })).body).toEqual(refused);
    // B's metered price archived: no product prices the meter any more.
    expect((await updateProduct(b.body.id, { prices: [{ id: b.body.prices[0].id }] })).status).toBe(200);
    const archived = await updateMeter(m.id, { is_archived: true });
    expect(archived.status, JSON.stringify(archived.body)).toBe(200);
    expect(archived.body.archived_at).toEqual(expect.any(String));
    // A's unarchive would price an archived meter again: refused at is_archived, A stays archived.
    const unarchive = await updateProduct(a.body.id, { is_archived: false });
    expect(unarchive.status).toBe(422);
    expect(unarchive.body.detail[0]).toMatchObject({ loc: ['body', 'is_archived'] });
    expect(unarchive.body.detail[0].msg).toContain(m.id);
    expect((await call('getProduct', 'GET', `/v1/products/${a.body.id}`)).body.is_archived).toBe(true);
    // Unarchived meter: A can come back, and then the meter is priced again.
    expect((await updateMeter(m.id, { is_archived: false })).status).toBe(200);
    expect((await updateProduct(a.body.id, { is_archived: false })).status).toBe(200);
    expect((await updateMeter(m.id, { is_archived: true })).body).toEqual(refused);
  });

  it('a product built on a meter read live and stored after the archive: refused by its own transaction, nothing written', async () => {
    // The race made deterministic: the meter read, then archived, then the product written.
    const m = await meter();
    const read = await getMeters(world.admin.table, [m.id]);
    expect((await updateMeter(m.id, { is_archived: true })).status).toBe(200);
    const body = monthly([fixed0, metered(m.id)]) as unknown as CreateProductBody;
    const product = newProduct(body, world.demo.organization_id, 'usd', new Date(), read);
    await expect(storeNewProduct(world.admin.table, product)).rejects.toBeInstanceOf(MeterArchivedMeanwhile);
    expect((await call('getProduct', 'GET', `/v1/products/${product.id}`)).status).toBe(404);
    // Through the API the same body is the price rule's 422.
    const reply = await createProduct(body);
    expect(reply.body.detail[0]).toMatchObject({
      loc: ['body', 'prices', '1', 'meter_id'],
      msg: 'Meter is archived.',
    });
  });

  it('a concurrent archive and a product pricing the meter: never both (the archive refused, or the price refused)', async () => {
    for (let round = 0; round < 6; round++) {
      const m = await meter();
      const [archive, product] = await Promise.all([
        updateMeter(m.id, { is_archived: true }),
        createProduct(monthly([fixed0, metered(m.id)])),
      ]);
      const outcome = [archive.status, product.status];
      // Either order is fine; both passing would leave a product pricing an archived meter.
      expect([
        [200, 422],
        [422, 201],
      ]).toContainEqual(outcome);
      if (product.status === 422) {
        expect(product.body.detail[0]).toMatchObject({ msg: 'Meter is archived.' });
      } else {
        expect(archive.body).toEqual(refused);
      }
    }
  });
});
