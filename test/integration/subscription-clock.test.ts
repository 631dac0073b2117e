import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createProduct } from '#scripts/admin/commands.ts';
import { customerMeterId } from '#shared/data/customer-meters.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { subscriptionListings } from '#shared/data/subscriptions.ts';
import { attr } from '#shared/data/table.ts';
import { ServiceUnavailable } from '#shared/domain/errors.ts';
import type { RecurringInterval } from '#shared/domain/period.ts';
import type { Subscription } from '#shared/generated/api-types.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { getSubscription } from '#shared/services/get-subscription.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import type { ClockReport } from '#shared/services/subscription-clock.ts';
import { changeSubscription } from '#shared/services/update-subscription.ts';
import { useClockWorld } from '../support/clock-world.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynamodb.ts';
import { heavyCountHours } from '../support/heavy-hours.ts';
import { outboxOf, typesOf } from '../support/outbox.ts';
import { putItems } from '../support/table-state.ts';

// Its dates lie before the demo seed's; what a test makes is revoked after it (test/support/clock-world.ts).
const clock = useClockWorld('subscription-clock', '2021-01-01T00:00:00.000Z');
const products = new Map<string, string>();

const at = (iso: string) => new Date(iso);

type ClockHandler = (
  event: Record<string, never>,
  context?: { getRemainingTimeInMillis(): number },
) => Promise<ClockReport>;

/** The clock's real handler at `now`, over its own function's client (its IAM policy), or over `deps`. */
async function clockAt(now: Date, deps?: Partial<Dependencies>): Promise<ClockHandler> {
  const { createHandler } = await import('#functions/subscription-clock/handler.ts');
  return createHandler({
    ...clock.world.depsFor('subscription-clock'),
    now: () => now,
    ...deps,
  }) as ClockHandler;
}
const runAt = async (iso: string) => (await clockAt(at(iso)))({});

/** A subscription to a free product of the given interval, created at `iso`. */
async function subscribeAt(iso: string, interval: RecurringInterval, count = 1): Promise<Subscription> {
  const key = `${interval}/${count}`;
  let productId = products.get(key);
  if (!productId) {
    productId = (
      await createProduct(clock.world.admin, {
        organizationId: clock.world.demo.organization_id,
        name: `Free every ${count} ${interval}`,
        recurringInterval: interval,
        recurringIntervalCount: count,
        priceAmount: 0,
        currency: 'usd',
      })
    ).id;
    products.set(key, productId);
  }
  return clock.subscribeAt(iso, productId);
}

const { stored } = clock;

/** The customer's list entries of a subscription, as the list holds them. */
async function entriesOf(id: string): Promise<Record<string, unknown>[]> {
  const items =
    (
      await clock.world.table.doc.send(
        new QueryCommand({
          TableName: clock.world.table.name,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: {
            ':pk': `LIST#SUBSCRIPTION-CUSTOMER#${clock.world.demo.organization_id}#${clock.customerId}`,
          },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];
  return items.filter((item) => item.id === id);
}

/**
 * Lists agree with the item: four entries in each list, each holding what the slim entries keep of
 * the subscription as stored (`subscriptionListings`), and nothing else of it.
 */
async function expectListedAsStored(id: string): Promise<void> {
  const item = await stored(id);
  const entries = await entriesOf(id);
  expect(entries).toHaveLength(4);
  for (const entry of entries) {
    for (const name of subscriptionListings.customer.slim?.attributes ?? []) {
      expect(entry[name], name).toEqual(item[name]);
    }
    expect(entry.current_period_end).toBe(item.current_period_end);
    expect(entry.status).toBe(item.status);
    expect(entry.metadata).toBeUndefined();
  }
}

describe('renewals', () => {
  it('a month after 31 January is the last day of February (29th in a leap year), then 31 March, 30 April', async () => {
    const subscription = await subscribeAt('2012-01-31T10:00:00.000Z', 'month');
    expect(subscription.current_period_end).toBe('2012-02-29T10:00:00.000Z');
    // Not due a millisecond before the end.
    await runAt('2012-02-29T09:59:59.999Z');
    expect((await stored(subscription.id)).current_period_end).toBe('2012-02-29T10:00:00.000Z');
    await runAt('2012-02-29T10:00:00.000Z');
    const renewed = await stored(subscription.id);
    expect(renewed).toMatchObject({
      status: 'active',
      current_period_start: '2012-02-29T10:00:00.000Z',
      current_period_end: '2012-03-31T10:00:00.000Z',
      started_at: '2012-01-31T10:00:00.000Z',
      canceled_at: null,
      ended_at: null,
      modified_at: '2012-02-29T10:00:00.000Z',
    });
    // The due index follows the new period end; the lists too.
    expect(renewed[attr.gsi2sk]).toMatch(new RegExp(`#${subscription.id}$`));
    await expectListedAsStored(subscription.id);
    await runAt('2012-04-01T00:00:00.000Z');
    expect((await stored(subscription.id)).current_period_end).toBe('2012-04-30T10:00:00.000Z');
  });

  it('a year after 29 February is 28 February, and 29 February again in the next leap year', async () => {
    const subscription = await subscribeAt('2012-02-29T00:00:00.000Z', 'year');
    const ends: string[] = [];
    for (const clock of ['2013-03-01', '2014-03-01', '2015-03-01', '2016-03-01']) {
      await runAt(`${clock}T00:00:00.000Z`);
      ends.push(String((await stored(subscription.id)).current_period_end));
    }
    expect(ends).toEqual([
      '2014-02-28T00:00:00.000Z',
      '2015-02-28T00:00:00.000Z',
      '2016-02-29T00:00:00.000Z',
      '2017-02-28T00:00:00.000Z',
    ]);
  });

  it('a subscription several periods behind renews once per period in one run, ending on the calendar', async () => {
    const weekly = await subscribeAt('2013-12-30T12:00:00.000Z', 'week', 2);
    const monthly = await subscribeAt('2013-10-31T00:00:00.000Z', 'month', 2);
    await runAt('2014-04-15T00:00:00.000Z');
    // Every other week from 30 December (13 and 27 January, ..., 7 April): 21 April is the first
    // end after the clock.
    expect((await stored(weekly.id)).current_period_end).toBe('2014-04-21T12:00:00.000Z');
    expect((await stored(weekly.id)).current_period_start).toBe('2014-04-07T12:00:00.000Z');
    // Every other month from 31 October: 31 December, 28 February, 30 April.
    expect((await stored(monthly.id)).current_period_end).toBe('2014-04-30T00:00:00.000Z');
    await expectListedAsStored(monthly.id);
  });
});

describe('cancellation at period end, and revoked subscriptions', () => {
  it('ends one set to cancel when its period ends: canceled, ended_at = ends_at = the period end', async () => {
    const subscription = await subscribeAt('2015-01-31T08:00:00.000Z', 'month');
    const deps = { ...clock.world.admin, now: () => at('2015-02-10T00:00:00.000Z') };
    const canceled = await changeSubscription(deps, clock.principal, subscription.id, {
      kind: 'cancel',
      atPeriodEnd: true,
      reason: 'too_expensive',
    });
    await runAt('2015-02-27T00:00:00.000Z');
    expect((await stored(subscription.id)).status).toBe('active');
    await runAt('2015-02-28T08:00:00.000Z');
    const ended = await stored(subscription.id);
    expect(ended).toMatchObject({
      status: 'canceled',
      cancel_at_period_end: true,
      canceled_at: canceled.canceled_at,
      ends_at: '2015-02-28T08:00:00.000Z',
      ended_at: '2015-02-28T08:00:00.000Z',
      current_period_end: '2015-02-28T08:00:00.000Z',
      customer_cancellation_reason: 'too_expensive',
    });
    // Out of the due index, and listed as ended.
    expect(ended[attr.gsi2pk]).toBeUndefined();
    expect(ended[attr.gsi2sk]).toBeUndefined();
    await expectListedAsStored(subscription.id);
    const reply = await clock.world.call(
      'GET',
      `/v1/subscriptions/?customer_id=${clock.customerId}&active=false&limit=100`,
      {
        token: clock.world.demo.personal_access_token,
      },
    );
    expect(reply.body.items.map((s: Subscription) => s.id)).toContain(subscription.id);
    // Nothing changes an ended subscription again, the clock included.
    await runAt('2015-06-01T00:00:00.000Z');
    expect(await stored(subscription.id)).toEqual(ended);
  });

  it('a revoked subscription is out of the due index and never touched', async () => {
    const subscription = await subscribeAt('2016-01-15T00:00:00.000Z', 'month');
    await changeSubscription(
      { ...clock.world.admin, now: () => at('2016-01-20T00:00:00.000Z') },
      clock.principal,
      subscription.id,
      {
        kind: 'revoke',
      },
    );
    const revoked = await stored(subscription.id);
    expect(revoked[attr.gsi2pk]).toBeUndefined();
    await runAt('2016-05-01T00:00:00.000Z');
    expect(await stored(subscription.id)).toEqual(revoked);
  });
});

describe('idempotent, concurrent, interrupted', () => {
  it('a second run at the same time changes nothing', async () => {
    const subscription = await subscribeAt('2017-03-31T00:00:00.000Z', 'month');
    const first = await runAt('2017-05-01T00:00:00.000Z');
    expect(first.renewed).toBeGreaterThanOrEqual(1);
    const after = await stored(subscription.id);
    expect(after.current_period_end).toBe('2017-05-31T00:00:00.000Z');
    const second = await runAt('2017-05-01T00:00:00.000Z');
    expect(second).toMatchObject({ renewed: 0, ended: 0, complete: true });
    expect(await stored(subscription.id)).toEqual(after);
  });

  it('two runs at once: every due period is renewed exactly once, every end made once', async () => {
    const renewing = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        subscribeAt(`2018-01-${String(10 + i).padStart(2, '0')}T00:00:00.000Z`, 'month'),
      ),
    );
    const ending = await subscribeAt('2018-01-05T00:00:00.000Z', 'month');
    await changeSubscription(
      { ...clock.world.admin, now: () => at('2018-01-06T00:00:00.000Z') },
      clock.principal,
      ending.id,
      {
        kind: 'cancel',
        atPeriodEnd: true,
      },
    );
    const time = at('2018-03-01T00:00:00.000Z');
    const [a, b] = await Promise.all([(await clockAt(time))({}), (await clockAt(time))({})]);
    // Each of the 12 was due once (its February end is after the clock): 12 renewals in all, and one end.
    for (const subscription of renewing) {
      const item = await stored(subscription.id);
      const day = String(subscription.started_at).slice(8, 10);
      expect(item.current_period_end).toBe(`2018-03-${day}T00:00:00.000Z`);
      await expectListedAsStored(subscription.id);
    }
    expect((await stored(ending.id)).status).toBe('canceled');
    expect(a.ended + b.ended).toBeGreaterThanOrEqual(1);
    // Whatever one run did, the other skipped: nothing was applied twice.
    const ours = renewing.length;
    expect(a.renewed + b.renewed).toBeGreaterThanOrEqual(ours);
  });

  it('a run that stops midway leaves each subscription renewed in full or untouched; the next run finishes', async () => {
    const subscriptions = await Promise.all(
      Array.from({ length: 6 }, (_, i) => subscribeAt(`2019-06-0${i + 1}T00:00:00.000Z`, 'month')),
    );
    // The clock's own client (its endpoint of the IAM proxy), failing its third transaction.
    const doc = createDocumentClient({
      endpoint: clock.world.iam.endpointFor('subscription-clock'),
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    let transactions = 0;
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        if (
          (context as { commandName?: string }).commandName === 'TransactWriteItemsCommand' &&
          ++transactions === 3
        ) {
          throw new Error('the function was stopped');
        }
        return next(args);
      },
      { step: 'initialize', name: 'crash' },
    );
    const crashing = await clockAt(at('2019-07-15T00:00:00.000Z'), {
      table: { doc, name: clock.world.table.name },
    });
    // The clock isolates the failed transaction (subscription-clock-failures.test.ts): the run goes on.
    expect(await crashing({})).toMatchObject({ failures: 1, failed: [expect.any(String)] });
    doc.destroy();
    const ends = await Promise.all(subscriptions.map(async (s) => (await stored(s.id)).current_period_end));
    for (const [i, subscription] of subscriptions.entries()) {
      expect([subscription.current_period_end, `2019-08-0${i + 1}T00:00:00.000Z`]).toContain(ends[i]);
      await expectListedAsStored(subscription.id);
    }
    await runAt('2019-07-15T00:00:00.000Z');
    for (const [i, subscription] of subscriptions.entries()) {
      expect((await stored(subscription.id)).current_period_end).toBe(`2019-08-0${i + 1}T00:00:00.000Z`);
    }
  });

  it('works in batches, and stops between batches when time runs out (the next run goes on)', async () => {
    const subscriptions = await Promise.all(
      Array.from({ length: 5 }, (_, i) => subscribeAt(`2020-09-0${i + 1}T00:00:00.000Z`, 'month')),
    );
    const { runSubscriptionClock } = await import('#shared/services/subscription-clock.ts');
    const deps = { ...clock.world.depsFor('subscription-clock'), now: () => at('2020-10-20T00:00:00.000Z') };
    let batches = 0;
    const partial = await runSubscriptionClock(deps, { batchSize: 2, timeLeft: () => batches++ < 2 });
    expect(partial.complete).toBe(false);
    expect(partial.batches).toBe(2);
    const rest = await runSubscriptionClock(deps, { batchSize: 2 });
    expect(rest.complete).toBe(true);
    for (const subscription of subscriptions) {
      expect((await stored(subscription.id)).current_period_start).toBe(subscription.current_period_end);
    }
  });
});

describe('the meters of the period-end events', () => {
  /** A count meter of events named `name` (since 2019) and a monthly product with a free fixed price and a metered price on it. */
  async function meteredProduct() {
    const name = `clock.${randomUUID()}`;
    const meter = newMeter(
      {
        name: `Clock ${name.slice(6, 14)}`,
        filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
        aggregation: { func: 'count' },
      },
      clock.world.demo.organization_id,
      at('2019-01-01T00:00:00.000Z'),
    );
    await storeNewMeter(clock.world.admin.table, meter);
    const product = await clock.world.call('POST', '/v1/products/', {
      token: clock.world.demo.personal_access_token,
      body: {
        name: `Clock metered ${randomUUID()}`,
        recurring_interval: 'month',
        prices: [
          { amount_type: 'fixed', price_amount: 0 },
          { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: meter.id },
        ],
      },
    });
    expect(product.status).toBe(201);
    return { name, meterId: meter.id, productId: product.body.id as string };
  }

  /** Events of the clock's customer named `name` that arrived at the given instants, folded by the aggregator. */
  const arrive = (name: string, instants: string[]) =>
    aggregateEvents(
      { table: clock.world.admin.table, now: () => new Date() },
      `seed-${randomUUID()}`,
      instants.map((iso, i) => ({
        sequence: String(i + 1),
        event: {
          id: randomUUID(),
          organization_id: clock.world.demo.organization_id,
          name,
          timestamp_us: Date.parse(iso) * 1000,
          external_id: null,
          customer_id: clock.customerId,
          external_customer_id: null,
          metadata: '{}',
          ingest_request: randomUUID(),
          ingested_at: iso,
        },
      })),
    );

  /** Get Subscription at `iso` (the service over its function's client), as the events' moment saw it. */
  const getAt = (id: string, iso: string) =>
    getSubscription({ ...clock.world.depsFor('get-subscription'), now: () => at(iso) }, clock.principal, id);

  /** The events of the change the clock made at `iso`. */
  const eventsAt = async (id: string, iso: string) =>
    (await outboxOf(clock.world.table, 'subscription', id)).filter((event) => event.timestamp === iso);

  it('a renewal’s and an end’s events carry the meters Get Subscription answers at that moment: the new period’s usage so far, the ended period’s', async () => {
    const { name, productId } = await meteredProduct();
    const renewing = await clock.subscribeAt('2020-03-01T10:00:00.000Z', productId);
    const ending = await clock.subscribeAt('2020-03-01T10:00:00.000Z', productId);
    await changeSubscription(
      { ...clock.world.admin, now: () => at('2020-03-05T00:00:00.000Z') },
      clock.principal,
      ending.id,
      { kind: 'cancel', atPeriodEnd: true },
    );
    await arrive(name, [
      '2020-03-01T08:59:00.000Z', // before the period's first hour: not counted
      '2020-03-02T00:00:00.000Z',
      '2020-03-02T00:00:01.000Z',
      '2020-03-20T12:00:00.000Z',
      '2020-04-01T09:30:00.000Z', // the period's last hour
      '2020-04-01T10:10:00.000Z', // after its end: the next period's first hour
    ]);
    const now = '2020-04-01T10:30:00.000Z';
    const report = await runAt(now);
    expect(report).toMatchObject({ renewed: 1, ended: 1, failures: 0 });

    const renewed = await getAt(renewing.id, now);
    expect(renewed.current_period_start).toBe('2020-04-01T10:00:00.000Z');
    expect(renewed.meters.map((m) => m.consumed_units)).toEqual([1]);
    const cycled = await eventsAt(renewing.id, now);
    expect(typesOf(cycled)).toEqual(['subscription.updated', 'subscription.cycled']);
    for (const event of cycled) expect(event.envelope.data.meters).toEqual(renewed.meters);

    const ended = await getAt(ending.id, now);
    expect(ended.ended_at).toBe('2020-04-01T10:00:00.000Z');
    expect(ended.meters.map((m) => m.consumed_units)).toEqual([4]);
    const revoked = await eventsAt(ending.id, now);
    expect(typesOf(revoked)).toEqual(['subscription.updated', 'subscription.revoked']);
    for (const event of revoked) expect(event.envelope.data.meters).toEqual(ended.meters);
  });

  it('past the read bound (where Get answers 503) the end is made anyway, its events carrying meters []: the period’s end does not wait on a read that would not fit next run either', async () => {
    const { meterId, productId } = await meteredProduct();
    const ending = await clock.subscribeAt('2020-05-01T00:00:00.000Z', productId);
    await changeSubscription(
      { ...clock.world.admin, now: () => at('2020-05-02T00:00:00.000Z') },
      clock.principal,
      ending.id,
      { kind: 'cancel', atPeriodEnd: true },
    );
    // 700 hours of the period, each an hour aggregate of about 5.7 KB (50 stream shards applied):
    // about 4 MB, past 500 read units of 4 KB, and no roll-up (the aggregator never ran for it).
    const id = customerMeterId(clock.customerId, meterId);
    const owner = {
      organization_id: clock.world.demo.organization_id,
      customer_id: clock.customerId,
      meter_id: meterId,
    };
    const start = Date.parse('2020-05-01T00:00:00.000Z');
    const items = heavyCountHours(owner, id, start);
    await putItems(clock.world.table, items);
    const now = '2020-06-01T00:30:00.000Z';
    await expect(getAt(ending.id, now)).rejects.toBeInstanceOf(ServiceUnavailable);
    const report = await runAt(now);
    expect(report).toMatchObject({ ended: 1, failures: 0 });
    expect((await stored(ending.id)).ended_at).toBe('2020-06-01T00:00:00.000Z');
    const events = await eventsAt(ending.id, now);
    expect(typesOf(events)).toEqual(['subscription.updated', 'subscription.revoked']);
    for (const event of events) expect(event.envelope.data.meters).toEqual([]);
  });
});
