/**
 * Issue 28's exactness property at full size (`npm run test:exactness`): 100,000 distinct events
 * over 50 customers and six meters, on DynamoDB Local, through the real ingest service and the real
 * consumer, with everything test/support/exactness.ts injects: 0 differences from a plain fold for
 * every customer, meter and hour, and `duplicates` equal to the injected count. The fast tier runs
 * the same harness with 2,000 events (meter-exactness.test.ts). `EXACTNESS_EVENTS` sets the size.
 * Then roll-ups under the same faults: five days of arrivals to one consumer that keeps up, under
 * the functions' policies, shown failing on a unique read that ignores its seen values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hourOf } from '#shared/data/customer-meters.ts';
import {
  apiDifferences,
  differences,
  driveConsumer,
  type ExactnessOptions,
  exactnessSetup,
  ingestAll,
  referenceFold,
  referenceTotals,
  rolledUp,
  splitShards,
  storedFolds,
  streamRecords,
  turnOnStream,
  windowDifferences,
} from '../support/exactness.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('meter-exactness-full');
});
afterAll(() => world?.drop());

const full: ExactnessOptions = {
  seed: 100_000,
  events: Number(process.env.EXACTNESS_EVENTS ?? 100_000),
  customers: 50,
  ingestBatch: 1000,
  consumerBatch: 1000,
  shards: 4,
  parallel: 4,
  faultRate: 0.2,
  replayRate: 0.2,
  retriedBatchRate: 0.1,
  minutesPerBatch: 7,
  models: 8,
  direct: true,
};

it(`${full.events} events, ${full.customers} customers, six meters: every customer meter's every hour equals the plain fold`, {
  timeout: 1_800_000,
}, async () => {
  const start = new Date(Date.now() - 3 * 86_400_000);
  await turnOnStream(world.table);
  const phases: Record<string, number> = {};
  let t = Date.now();
  const lap = (name: string) => {
    phases[name] = Date.now() - t;
    t = Date.now();
  };
  const setup = await exactnessSetup(world, full, start);
  const ingested = await ingestAll(world, setup, full, start);
  lap('ingest ms');
  expect(ingested.distinct.size).toBe(full.events);
  expect(ingested.duplicatesAnswered).toBe(ingested.duplicatesInjected);
  const records = await streamRecords(world.table, setup, ingested.distinct.size);
  expect(records.length).toBe(ingested.distinct.size);
  lap('stream read ms');
  const driven = await driveConsumer(world, splitShards(records, full.shards), full);
  lap('consumer ms');
  const reference = referenceFold(setup, ingested);
  const diffs = differences(reference, await storedFolds(world, setup));
  lap('compare ms');
  console.log('exactness (full)', {
    events: full.events,
    duplicates: ingested.duplicatesInjected,
    aggregates: reference.size,
    ...driven,
    ...phases,
  });
  expect(driven.fired.before).toBeGreaterThan(0);
  expect(driven.fired.after).toBeGreaterThan(0);
  expect(diffs).toEqual([]);
});

describe('roll-ups under the same faults', () => {
  it('five days of arrivals to a consumer that keeps up: closed hours rolled up (day aggregates, seen values, day values) while batches fail part-way, replay and bisect; every hour, every all-time total and every window still equals the plain fold', async () => {
    // 600 events in 30 batches 4 h apart: arrivals over five days, so each customer meter is
    // rolled up on most of them; one shard (see `consumerClock`).
    const options: ExactnessOptions = {
      ...full,
      direct: undefined,
      faultRate: 0.3,
      replayRate: 0.3,
      retriedBatchRate: 0.2,
      models: 40,
      seed: 2804,
      events: 600,
      customers: 4,
      ingestBatch: 20,
      consumerBatch: 40,
      shards: 1,
      minutesPerBatch: 240,
      consumerClock: 'arrival',
    };
    const start = new Date(Date.now() - 6 * 86_400_000);
    await turnOnStream(world.table);
    const setup = await exactnessSetup(world, options, start);
    const ingested = await ingestAll(world, setup, options, start);
    const records = await streamRecords(world.table, setup, ingested.distinct.size);
    const driven = await driveConsumer(world, splitShards(records, 1), options);
    expect(driven.fired.before + driven.fired.after).toBeGreaterThan(0);
    expect(differences(referenceFold(setup, ingested), await storedFolds(world, setup))).toEqual([]);
    // The roll-ups did happen, for every aggregation, `unique` with its seen values.
    const rolled = await rolledUp(world, setup);
    expect(rolled.meters).toEqual(new Set(setup.meters.map((m) => m.aggregation.func)));
    expect(rolled.days).toBeGreaterThan(0);
    expect(rolled.seen).toBeGreaterThan(0);
    expect(rolled.dayValues).toBeGreaterThan(0);
    const totals = referenceTotals(setup, ingested);
    expect(await apiDifferences(world, setup, totals, setup.customers)).toEqual([]);
    // Windows (a period, quantities) from day aggregates and day values and the hours around them:
    // every arrival, and windows cut mid-day at both ends.
    const hourAt = (ms: number) => hourOf(new Date(ms).toISOString());
    const first = start.getTime() - 86_400_000;
    const last = start.getTime() + 8 * 86_400_000;
    const windows = [
      { from: hourAt(first), to: hourAt(last) },
      { from: hourAt(start.getTime() + 13 * 3_600_000), to: hourAt(start.getTime() + 101 * 3_600_000) },
      { from: hourAt(start.getTime() + 30 * 3_600_000), to: hourAt(start.getTime() + 72 * 3_600_000 - 1) },
    ];
    expect(await windowDifferences(world, setup, referenceFold(setup, ingested), windows)).toEqual([]);
  }, 600_000);
});
