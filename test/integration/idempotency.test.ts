import { QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler as createSubscriptionHandler } from '#functions/create-subscription/handler.ts';
import { indexNames } from '#shared/data/table.ts';
import { sharedSegmentsRegistered } from '../support/subscription-counts.ts';
import { buildEvent, createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('idempotency');
  // A tenant that has signed up before: no first-of-its-shard registry put in the round trips counted.
  await sharedSegmentsRegistered(world.table, world.demo);
});
afterAll(() => world?.drop());

const subscriptionBody = () => ({
  product_id: world.demo.free_product_id,
  customer_id: world.demo.second_customer_id,
});
const post = (
  key: string | undefined,
  body: unknown = subscriptionBody(),
  token = world.demo.personal_access_token,
) =>
  world.call('POST', '/v1/subscriptions/', {
    token,
    body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });

async function subscriptionsOf(customerId: string): Promise<number> {
  const result = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      IndexName: indexNames.gsi1,
      KeyConditionExpression: 'GSI1PK = :c AND begins_with(GSI1SK, :s)',
      ExpressionAttributeValues: { ':c': `CUSTOMER#${customerId}`, ':s': 'SUBSCRIPTION#' },
    }),
  );
  return result.Count ?? 0;
}

describe('Idempotency-Key on Create Subscription', () => {
  it('a retry with the same key returns the first answer and creates nothing more', async () => {
    const before = await subscriptionsOf(world.demo.second_customer_id);
    world.resetCount();
    const first = await post('retry-1');
    const firstTrips = world.roundTrips();
    world.resetCount();
    const second = await post('retry-1');
    const replayTrips = world.roundTrips();
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers['content-type']).toBe('application/json');
    expect(await subscriptionsOf(world.demo.second_customer_id)).toBe(before + 1);
    expect(firstTrips).toBeLessThanOrEqual(3 + 2);
    expect(replayTrips).toBe(2); // authentication + the claim that finds the answer
  });

  it('an answer larger than one item (a subscription at every limit, ≈ 350 KB) is replayed, never created twice', async () => {
    const emoji = (n: number) => '😀'.repeat(n);
    const metadata = () =>
      Object.fromEntries(
        Array.from({ length: 50 }, (_, i) => [`${emoji(38)}${String(i).padStart(2, '0')}`, emoji(500)]),
      );
    const token = world.demo.personal_access_token;
    const customer = await world.call('POST', '/v1/customers/', {
      token,
      body: {
        email: `${emoji(300)}@example.com`,
        name: emoji(256),
        external_id: emoji(256),
        metadata: metadata(),
      },
    });
    const product = await world.call('POST', '/v1/products/', {
      token,
      body: {
        name: emoji(64),
        description: emoji(5000),
        recurring_interval: 'month',
        metadata: metadata(),
        prices: [{ amount_type: 'free' }],
      },
    });
    expect([customer.status, product.status]).toEqual([201, 201]);
    const body = { product_id: product.body.id, customer_id: customer.body.id, metadata: metadata() };
    const first = await post('large-answer', body);
    expect(first.status).toBe(201);
    expect(Buffer.byteLength(JSON.stringify(first.body))).toBeGreaterThan(300_000);
    // Even once the first attempt's lease would have ended (a record left in progress is taken over).
    let start: Record<string, unknown> | undefined;
    do {
      const page = await world.table.doc.send(
        new ScanCommand({
          TableName: world.table.name,
          FilterExpression: 'entity = :e AND #s = :p',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':e': 'idempotency', ':p': 'in_progress' },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const record of page.Items ?? []) {
        await world.table.doc.send(
          new UpdateCommand({
            TableName: world.table.name,
            Key: { PK: record.PK, SK: record.SK },
            UpdateExpression: 'SET lease_until = :past',
            ExpressionAttributeValues: { ':past': 0 },
          }),
        );
      }
      start = page.LastEvaluatedKey;
    } while (start);
    world.resetCount();
    const retry = await post('large-answer', body);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(world.roundTrips()).toBe(3); // authentication, the claim, the answer's parts
    expect(await subscriptionsOf(customer.body.id)).toBe(1);
  });

  it('the same request spelled differently (key order, whitespace) is the same request', async () => {
    const body = subscriptionBody();
    const first = await post(
      'spelling',
      `{"product_id":"${body.product_id}","customer_id":"${body.customer_id}"}`,
    );
    const second = await post(
      'spelling',
      `{ "customer_id" : "${body.customer_id}",\n "product_id": "${body.product_id}" }`,
    );
    expect(second.body.id).toBe(first.body.id);
  });

  it('the same key with a different body is a 422 at the header', async () => {
    await post('reuse', { ...subscriptionBody(), metadata: { a: 1 } });
    const reply = await post('reuse', { ...subscriptionBody(), metadata: { a: 2 } });
    expect(reply.status).toBe(422);
    expect(reply.body).toEqual({
      error: 'RequestValidationError',
      detail: [
        expect.objectContaining({ loc: ['header', 'Idempotency-Key'], type: 'idempotency_key_reused' }),
      ],
    });
  });

  it('keys belong to a credential: another user reusing a key gets their own answer', async () => {
    const other = world.demo.other_organization;
    const mine = await post('shared-key');
    const theirs = await post(
      'shared-key',
      { product_id: other.free_product_id, customer_id: other.customer_id },
      other.personal_access_token,
    );
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
  });

  it('of concurrent requests with one key exactly one creates', async () => {
    for (let round = 0; round < 3; round++) {
      const before = await subscriptionsOf(world.demo.second_customer_id);
      const replies = await Promise.all(Array.from({ length: 10 }, () => post(`concurrent-${round}`)));
      const created = replies.filter((r) => r.status === 201);
      const busy = replies.filter((r) => r.status === 409);
      expect(created.length + busy.length).toBe(10);
      expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
      for (const reply of busy) {
        expect(reply.body.error).toBe('IdempotencyKeyInUse');
        expect(reply.headers['retry-after']).toBe('1');
      }
      expect(await subscriptionsOf(world.demo.second_customer_id)).toBe(before + 1);
    }
  });

  it('per-request state never leaks between invocations sharing one context object', async () => {
    // The first request is held inside its transaction while two more arrive with its key, all on
    // one context object: state kept on the context let the second's 409 release the first's claim,
    // and the third then created a second subscription.
    const deps = world.depsFor('create-subscription');
    const handler = createSubscriptionHandler(deps);
    const shared = { awsRequestId: 'shared', getRemainingTimeInMillis: () => 10_000 } as Context;
    const event = () =>
      buildEvent('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: subscriptionBody(),
        headers: { 'idempotency-key': 'shared-context' },
      });
    let hold = true;
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = () => {};
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    deps.table.doc.middlewareStack.add(
      (next, context) => async (args) => {
        if (hold && (context as { commandName?: string }).commandName === 'TransactWriteItemsCommand') {
          hold = false;
          held();
          await gate;
        }
        return next(args);
      },
      { step: 'initialize', name: 'holdFirstTransaction' },
    );
    try {
      const before = await subscriptionsOf(world.demo.second_customer_id);
      const first = handler(event(), shared);
      await holding;
      const second = await handler(event(), shared);
      const third = await handler(event(), shared);
      release();
      const firstReply = await first;
      expect([firstReply.statusCode, second.statusCode, third.statusCode]).toEqual([201, 409, 409]);
      expect(await subscriptionsOf(world.demo.second_customer_id)).toBe(before + 1);
    } finally {
      release();
      deps.table.doc.middlewareStack.remove('holdFirstTransaction');
    }
  });

  it('a failed request frees its key: the retry runs again', async () => {
    const paid = { product_id: world.demo.paid_product_id, customer_id: world.demo.customer_id };
    const first = await post('failed-first', paid);
    const retry = await post('failed-first', paid);
    expect(first.status).toBe(422);
    expect(retry.status).toBe(422);
    expect(retry.body).toEqual(first.body);
  });

  it('keys expire after 24 hours', async () => {
    const later = (hours: number) =>
      createSubscriptionHandler({
        ...world.depsFor('create-subscription'),
        now: () => new Date(Date.now() + hours * 3_600_000),
      });
    const event = () =>
      buildEvent('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: subscriptionBody(),
        headers: { 'idempotency-key': 'expiring' },
      });
    const context = {} as Context;
    const first = await post('expiring');
    const within = await later(23)(event(), context);
    const after = await later(25)(event(), context);
    expect(JSON.parse(within.body ?? '{}').id).toBe(first.body.id);
    expect(after.statusCode).toBe(201);
    expect(JSON.parse(after.body ?? '{}').id).not.toBe(first.body.id);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(256)],
    ['control character', 'a\tb'],
  ])('rejects a malformed key (%s) with 422 at the header', async (_, key) => {
    const reply = await post(key);
    expect(reply.status).toBe(422);
    expect(reply.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
  });

  it('a body with a deeply nested unknown field is still identified, not a 500', async () => {
    const deep = (inner: string) => `${'['.repeat(6000)}${inner}${']'.repeat(6000)}`;
    const body = (inner: string) => {
      const { product_id, customer_id } = subscriptionBody();
      return `{"product_id":"${product_id}","customer_id":"${customer_id}","extra":${deep(inner)}}`;
    };
    const first = await post('deep', body('1'));
    const replay = await post('deep', body('1'));
    const other = await post('deep', body('2'));
    expect(first.status).toBe(201);
    expect(replay.body.id).toBe(first.body.id);
    expect(other.status).toBe(422);
  });

  it('accepts a key of 255 printable characters', async () => {
    expect((await post('~'.repeat(255))).status).toBe(201);
  });
});

describe('Idempotency-Key on Create Client', () => {
  const register = (key: string) =>
    world.call('POST', '/v1/oauth2/register', {
      token: world.demo.personal_access_token,
      body: { redirect_uris: ['https://app.example/cb'], client_name: 'retry' },
      headers: { 'idempotency-key': key },
    });

  it('replays the registration, secret included, without storing the secret in plaintext', async () => {
    const first = await register('client-1');
    const second = await register('client-1');
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers['cache-control']).toBe('no-store');
    expect(second.body).toEqual(first.body);
    const everything = await world.table.doc.send(new ScanCommand({ TableName: world.table.name }));
    const dump = JSON.stringify(everything.Items);
    expect(dump).not.toContain(first.body.client_secret);
    expect(dump).not.toContain('client-1');
  });
});
