import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, createProduct } from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { sharedSegmentsRegistered } from '../support/subscription-counts.ts';
import { softDelete } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('create-subscription');
  // A tenant that has signed up before: no first-of-its-shard registry put in the round trips counted.
  await sharedSegmentsRegistered(world.table, world.demo);
});
afterAll(() => world?.drop());

const PATH = '/v1/subscriptions/';
const post = (
  body: unknown,
  token = world.demo.personal_access_token,
  headers: Record<string, string> = {},
) => world.call('POST', PATH, { token, body, headers });

describe('Create Subscription: success', () => {
  it('creates an active subscription to the free product with the full nested response (201)', async () => {
    const before = Date.now();
    const reply = await post({
      product_id: world.demo.free_product_id,
      customer_id: world.demo.customer_id,
      metadata: { plan: 'starter', seats: 3, ratio: 0.5, trial: false },
    });
    expect(reply.status).toBe(201);
    expect(reply.headers['content-type']).toBe('application/json');
    const sub = reply.body;
    expect(sub).toMatchObject({
      status: 'active',
      amount: 0,
      currency: 'usd',
      recurring_interval: 'month',
      recurring_interval_count: 1,
      customer_id: world.demo.customer_id,
      product_id: world.demo.free_product_id,
      metadata: { plan: 'starter', seats: 3, ratio: 0.5, trial: false },
      cancel_at_period_end: false,
      pause_at_period_end: false,
      custom_field_data: {},
      seats: null,
      meters: [],
    });
    for (const key of [
      'modified_at',
      'trial_start',
      'trial_end',
      'canceled_at',
      'ends_at',
      'ended_at',
      'discount_id',
      'checkout_id',
      'discount',
      'customer_cancellation_reason',
      'customer_cancellation_comment',
      'current_meter_period_start',
      'current_meter_period_end',
      'paused_at',
      'resumes_at',
      'pending_update',
      'past_due_at',
    ]) {
      expect(sub, key).toHaveProperty(key, null);
    }
    expect(sub.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sub.started_at).toBe(sub.current_period_start);
    expect(sub.created_at).toBe(sub.current_period_start);
    const start = new Date(sub.current_period_start);
    expect(start.getTime()).toBeGreaterThanOrEqual(before - 1);
    expect(sub.current_period_start).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const expectedEnd = new Date(start);
    expectedEnd.setUTCMonth(start.getUTCMonth() + 1);
    if (expectedEnd.getUTCDate() !== start.getUTCDate()) expectedEnd.setUTCDate(0);
    expect(sub.current_period_end).toBe(expectedEnd.toISOString());

    expect(sub.customer).toMatchObject({
      id: world.demo.customer_id,
      organization_id: world.demo.organization_id,
    });
    expect(sub.customer.deleted_at).toBeNull();
    expect(sub.product).toMatchObject({
      id: world.demo.free_product_id,
      is_recurring: true,
      is_archived: false,
      benefits: [],
      medias: [],
      attached_custom_fields: [],
    });
    expect(sub.prices).toHaveLength(1);
    expect(sub.prices[0]).toMatchObject({
      amount_type: 'fixed',
      price_amount: 0,
      price_currency: 'usd',
      legacy: false,
    });

    const stored = await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: keys.subscription(sub.id) }),
    );
    expect(stored.Item).toMatchObject({ customer_id: world.demo.customer_id, status: 'active' });
  });

  it('defaults metadata to {} and allows several subscriptions to one product', async () => {
    const body = { product_id: world.demo.free_product_id, customer_id: world.demo.second_customer_id };
    const first = await post(body);
    const second = await post(body);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.body.metadata).toEqual({});
    expect(first.body.id).not.toBe(second.body.id);
  });

  it('accepts ids in upper case and answers them in lower case', async () => {
    const reply = await post({
      product_id: world.demo.free_product_id.toUpperCase(),
      customer_id: world.demo.customer_id.toUpperCase(),
    });
    expect(reply.status).toBe(201);
    expect(reply.body.product_id).toBe(world.demo.free_product_id);
  });

  it("uses the organization's default currency", async () => {
    const other = world.demo.other_organization;
    const reply = await post(
      { product_id: other.free_product_id, customer_id: other.customer_id },
      other.personal_access_token,
    );
    expect(reply.status).toBe(201);
    expect(reply.body.currency).toBe('eur');
  });

  it('costs at most 3 DynamoDB round trips, authentication included', async () => {
    world.resetCount();
    const reply = await post({ product_id: world.demo.free_product_id, customer_id: world.demo.customer_id });
    expect(reply.status).toBe(201);
    expect(world.roundTrips()).toBeLessThanOrEqual(3);
  });
});

describe('Create Subscription: rules, in contract order (422 PolarRequestValidationError)', () => {
  const rule = async (product_id: string, customer_id: string, loc: string[], msg: string) => {
    const reply = await post({ product_id, customer_id });
    expect(reply.status).toBe(422);
    expect(reply.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [{ loc, msg, type: 'value_error', input: loc[1] === 'product_id' ? product_id : customer_id }],
    });
  };
  const unknownId = '6f1c1a37-58a5-4f7a-9d52-2f1f7f0b2c11';

  it('unknown product', () =>
    rule(unknownId, world.demo.customer_id, ['body', 'product_id'], 'Product does not exist.'));

  it("another organization's product", () =>
    rule(
      world.demo.other_organization.free_product_id,
      world.demo.customer_id,
      ['body', 'product_id'],
      'Product does not exist.',
    ));

  it('one-time product', () =>
    rule(
      world.demo.one_time_product_id,
      world.demo.customer_id,
      ['body', 'product_id'],
      'Product is not a recurring product.',
    ));

  it('archived product', () =>
    rule(
      world.demo.archived_product_id,
      world.demo.customer_id,
      ['body', 'product_id'],
      'Product is archived.',
    ));

  it('paid product', () =>
    rule(
      world.demo.paid_product_id,
      world.demo.customer_id,
      ['body', 'product_id'],
      'Product is not free. The customer should go through a checkout to create a paid subscription.',
    ));

  it('unknown customer', () =>
    rule(world.demo.free_product_id, unknownId, ['body', 'customer_id'], 'Customer does not exist.'));

  it("another organization's customer", () =>
    rule(
      world.demo.free_product_id,
      world.demo.other_organization.customer_id,
      ['body', 'customer_id'],
      'Customer does not exist.',
    ));

  it('checks the product before the customer', () =>
    rule(
      world.demo.paid_product_id,
      unknownId,
      ['body', 'product_id'],
      'Product is not free. The customer should go through a checkout to create a paid subscription.',
    ));

  it('deleted customer and deleted product', async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: 'gone@x.example',
    });
    const product = await createProduct(world.admin, {
      organizationId: world.demo.organization_id,
      name: 'gone',
      recurringInterval: 'month',
      priceAmount: 0,
      currency: 'usd',
    });
    for (const key of [keys.customer(customer.id), keys.product(product.id)]) {
      await softDelete(world.table, key);
    }
    await rule(world.demo.free_product_id, customer.id, ['body', 'customer_id'], 'Customer does not exist.');
    await rule(product.id, world.demo.customer_id, ['body', 'product_id'], 'Product does not exist.');
  });
});

describe('Create Subscription: request shape (422 RequestValidationError)', () => {
  const invalid = async (body: unknown, loc: string[], type: string) => {
    const reply = await post(body);
    expect(reply.status).toBe(422);
    expect(reply.body.error).toBe('RequestValidationError');
    expect(reply.body.detail).toContainEqual(expect.objectContaining({ loc, type }));
    return reply.body.detail;
  };
  const ok = () => ({ product_id: world.demo.free_product_id, customer_id: world.demo.customer_id });

  it('missing ids', async () => {
    const detail = await invalid({}, ['body', 'product_id'], 'missing');
    expect(detail).toHaveLength(2);
    expect(detail[1]).toMatchObject({ loc: ['body', 'customer_id'], type: 'missing' });
  });

  it('a UUID of another version', () =>
    invalid(
      { ...ok(), product_id: 'a8098c1a-f86e-11da-bd1a-00112444be1e' },
      ['body', 'product_id'],
      'uuid_version',
    ));

  it('not a UUID', () =>
    invalid({ ...ok(), customer_id: 'cus_123' }, ['body', 'customer_id'], 'uuid_parsing'));

  it('metadata: key over 40, value over 500, null / array / object values, over 50 pairs', async () => {
    await invalid(
      { ...ok(), metadata: { ['k'.repeat(41)]: 'v' } },
      ['body', 'metadata', 'k'.repeat(41)],
      'string_too_long',
    );
    await invalid(
      { ...ok(), metadata: { note: 'x'.repeat(501) } },
      ['body', 'metadata', 'note'],
      'string_too_long',
    );
    await invalid({ ...ok(), metadata: { a: null } }, ['body', 'metadata', 'a'], 'string_type');
    await invalid({ ...ok(), metadata: { a: [1] } }, ['body', 'metadata', 'a'], 'string_type');
    await invalid({ ...ok(), metadata: { a: { b: 1 } } }, ['body', 'metadata', 'a'], 'string_type');
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
    await invalid({ ...ok(), metadata: many }, ['body', 'metadata'], 'too_long');
    await invalid({ ...ok(), metadata: 'nope' }, ['body', 'metadata'], 'dict_type');
  });

  it('metadata limits count code points and accept the boundaries', async () => {
    const emoji = '😀'.repeat(500);
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`.padEnd(40, 'x'), i]));
    expect((await post({ ...ok(), metadata: { note: emoji } })).status).toBe(201);
    expect((await post({ ...ok(), metadata: fifty })).status).toBe(201);
  });

  it('metadata numbers DynamoDB could not store as numbers are kept, not a 500', async () => {
    const body = (metadata: string) =>
      `{"product_id":"${world.demo.free_product_id}","customer_id":"${world.demo.customer_id}","metadata":${metadata}}`;
    const reply = await post(body('{"big":1e300,"tiny":1e-200,"long":9007199254740991,"neg":-0.5}'));
    expect(reply.status).toBe(201);
    expect(reply.body.metadata).toEqual({ big: 1e300, tiny: 1e-200, long: 9007199254740991, neg: -0.5 });
    // Past the double range, and integers past 2^53−1 (which used to come back rounded): refused.
    const overflow = await post(body('{"inf":1e400,"long":12345678901234567890}'));
    expect(overflow.status).toBe(422);
    expect(overflow.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'metadata', 'inf'], type: 'finite_number', input: '1e400' }),
      expect.objectContaining({
        loc: ['body', 'metadata', 'long'],
        type: 'int_range',
        input: '12345678901234567890',
      }),
    ]);
  });

  it('a body that is not an object, or not JSON', async () => {
    await invalid([], ['body'], 'dict_type');
    const reply = await post('{"product_id": ');
    expect(reply.status).toBe(422);
    expect(reply.body.detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
  });

  it('nothing is written for a rejected request', async () => {
    world.resetCount();
    await post({ ...ok(), metadata: { a: null } });
    expect(world.roundTrips()).toBe(1); // authentication only
  });
});
