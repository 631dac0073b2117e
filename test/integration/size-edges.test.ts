/**
 * Size edges (issue 25 outcome 6): the largest customer, product and subscriptions the contract
 * allows, driven through create, cancel, uncancel, the clock's end and renewal, and revoke; every
 * TransactWriteItems the functions send is recorded and measured by DynamoDB's rules
 * (`shared/data/item-size.ts`): under 100 actions and 4 MB (DynamoDB Local does not enforce the
 * 4 MB), each item under 400 KB, and each event payload with headroom under it.
 *
 * An action's size is the larger of its item before and after the call (read strongly consistent
 * through the operator's client around the call): a put or update its image, a delete or condition
 * check the item it names.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemBytes, MAX_ITEM_BYTES } from '#shared/data/item-size.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
interface Measured {
  fn: string;
  actions: number;
  bytes: number;
  largestItem: number;
  largestEvent: number;
  /** It moves a subscription to the `canceled` status (its segment): a revoke, or the clock's end. */
  cancels: boolean;
}
const transactions: Measured[] = [];
const FUNCTIONS = [
  'create-customer',
  'create-product',
  'create-subscription',
  'update-subscription',
  'revoke-subscription',
  'subscription-clock',
];
const TRANSACTION_BYTES = 4 * 1024 * 1024;
/** Headroom asked of an event payload: at most 90% of an item. */
const EVENT_BYTES = 0.9 * MAX_ITEM_BYTES;

type Key = { PK: string; SK: string };
const sizeOf = async (key: Key) => {
  const found = await world.table.doc.send(
    new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
  );
  return found.Item ? itemBytes(found.Item) : 0;
};

beforeAll(async () => {
  world = await createWorld('size-edges');
  for (const fn of FUNCTIONS) {
    world.depsFor(fn).table.doc.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as TransactWriteCommandInput;
        if (!input || !('TransactItems' in input) || !input.TransactItems) return next(args);
        const actions = input.TransactItems.map((action) => {
          const item = action.Put?.Item;
          if (item) return { key: { PK: item.PK, SK: item.SK } as Key, put: item };
          const key = (action.Update ?? action.Delete ?? action.ConditionCheck)?.Key as Key;
          return { key, put: undefined };
        });
        const before = await Promise.all(actions.map((a) => sizeOf(a.key)));
        const result = await next(args);
        const after = await Promise.all(actions.map((a) => sizeOf(a.key)));
        const sizes = actions.map((a, i) =>
          Math.max(before[i] ?? 0, after[i] ?? 0, a.put ? itemBytes(a.put) : 0),
        );
        const events = actions
          .map((a) => a.put)
          .filter((item): item is Record<string, unknown> => String(item?.PK ?? '').startsWith('EVENT#'))
          .map((item) => Buffer.byteLength(String(item.payload ?? '')));
        const cancels = input.TransactItems.some(
          (action) =>
            String(action.Update?.Key?.PK ?? '').startsWith('SUBSCRIPTION#') &&
            action.Update?.ExpressionAttributeValues?.[':status'] === 'canceled',
        );
        transactions.push({
          fn,
          cancels,
          actions: actions.length,
          bytes: sizes.reduce((sum, size) => sum + size, 0),
          largestItem: Math.max(...sizes),
          largestEvent: Math.max(0, ...events),
        });
        return result;
      },
      { step: 'initialize', name: 'measureTransactions' },
    );
  }
}, 60_000);
afterAll(() => world?.drop());

const emoji = (n: number) => '😀'.repeat(n);
const maxMetadata = () =>
  Object.fromEntries(
    Array.from({ length: 50 }, (_, i) => [`${emoji(38)}${String(i).padStart(2, '0')}`, emoji(500)]),
  );
const call = (method: string, url: string, body?: unknown) =>
  world.call(method, url, {
    token: world.demo.personal_access_token,
    ...(body === undefined ? {} : { body }),
  });

describe('the largest customer, product and subscription through their lifecycle', () => {
  it('every transaction under 100 actions, every item under 400 KB, every event under 360 KB; create, cancel, uncancel and renewal under 4 MB', async () => {
    const customer = await call('POST', '/v1/customers/', {
      email: `${emoji(300)}${randomUUID().slice(0, 4)}@example.com`,
      name: emoji(256),
      external_id: emoji(256),
      metadata: maxMetadata(),
    });
    expect(customer.status).toBe(201);
    const product = await call('POST', '/v1/products/', {
      name: emoji(64),
      description: emoji(5000),
      recurring_interval: 'month',
      metadata: maxMetadata(),
      prices: [{ amount_type: 'free' }],
    });
    expect(product.status).toBe(201);
    const subscribe = async () => {
      const reply = await call('POST', '/v1/subscriptions/', {
        product_id: product.body.id,
        customer_id: customer.body.id,
        metadata: maxMetadata(),
      });
      expect(reply.status).toBe(201);
      return reply.body as { id: string; current_period_end: string };
    };
    const ending = await subscribe();
    const renewing = await subscribe();
    const revoked = await subscribe();
    for (const cancel of [true, false, true]) {
      const reply = await call('PATCH', `/v1/subscriptions/${ending.id}`, { cancel_at_period_end: cancel });
      expect(reply.status).toBe(200);
    }
    expect((await call('DELETE', `/v1/subscriptions/${revoked.id}`)).status).toBe(200);
    // The clock past the period's end: `ending` ends, `renewing` renews.
    const { createHandler } = await import('#functions/subscription-clock/handler.ts');
    const after = new Date(new Date(ending.current_period_end).getTime() + 60_000);
    const run = createHandler({ ...world.depsFor('subscription-clock'), now: () => after }) as (
      event: Record<string, never>,
    ) => Promise<{ ended: number; renewed: number }>;
    const report = await run({});
    expect(report.ended).toBeGreaterThanOrEqual(1);
    expect(report.renewed).toBeGreaterThanOrEqual(1);
    const stored = await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: { PK: `SUBSCRIPTION#${renewing.id}`, SK: `SUBSCRIPTION#${renewing.id}` },
      }),
    );
    expect(stored.Item?.current_period_end).not.toBe(renewing.current_period_end);

    const byFunction = new Set(transactions.map((t) => t.fn));
    for (const fn of FUNCTIONS) expect(byFunction, fn).toContain(fn);
    const table = transactions.map(
      (t) =>
        `${t.fn}: ${t.actions} actions, ${(t.bytes / 1024).toFixed(0)} KB, largest item ${(t.largestItem / 1024).toFixed(0)} KB, largest event ${(t.largestEvent / 1024).toFixed(0)} KB`,
    );
    console.log(table.join('\n'));
    for (const t of transactions) {
      expect(t.actions, t.fn).toBeLessThan(100);
      expect(t.largestItem, t.fn).toBeLessThan(MAX_ITEM_BYTES);
      expect(t.largestEvent, t.fn).toBeLessThan(EVENT_BYTES);
    }
    // Create, cancel, uncancel and renewal stay under 4 MB.
    for (const t of transactions.filter((t) => !revokes(t)))
      expect(t.bytes, t.fn).toBeLessThan(TRANSACTION_BYTES);
  }, 300_000);

  // A revoke, and the clock's end, move a subscription's 16 list entries to the canceled segment
  // (16 deleted, 16 put) and write 2 to 3 events of ≈ 342 KB. While entries copied the subscription
  // (≈ 110 KB each at this size) that was ≈ 4.2 to 4.5 MB, past DynamoDB's 4 MB; slim entries
  // (shared/data/listing.ts) keep a few attributes: ≈ 1.2 MB now.
  it('a revoke and the end of a maximum-size subscription stay under 4 MB', () => {
    const over = transactions.filter(revokes);
    expect(over.length).toBeGreaterThan(0);
    for (const t of over) expect(t.bytes, t.fn).toBeLessThan(TRANSACTION_BYTES);
  });
});

/**
 * The transactions that move a subscription to the canceled segment: revoke, and the clock's end
 * (told by what the transaction sets, not by its action count, which the design changes: the end
 * had more than 40 actions while its counts were in it, 38 since the stream keeps them).
 */
const revokes = (t: Measured) => t.fn === 'revoke-subscription' || t.cancels;
