/**
 * What the per-tenant ceiling tests (`*-ceiling.test.ts`, `npm run test:scale`) share: a scale
 * world of their own, a case recorded through the real handler as many times as there are shards
 * (plus one that warms the function up, left out), the write units per partition of a family, and
 * the checks every create must pass whatever it writes: no shared partition of the table or an
 * index below 1,000 requests/s, and no partition of the organization itself written.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { benchEnvironment } from '#test/bench/handlers.ts';
import type { DynamoCase } from '#test/bench/work-kit.ts';
import { type CaseModel, type RequestCost, requestCost } from './model.ts';
import type { RecordedCall } from './recorder.ts';
import { recordOne, type ScaleWorld, scaleWorld, stopDynamoDbLocal } from './run-model.ts';

/** The per-tenant target of issue 25, requests/s. */
export const TARGET_PER_SECOND = 1_000;

/** Requests recorded per case: as many as a family has shards, so that more than one is written. */
export const REPETITIONS = 16;

/** A scale world for this file, made before its tests and dropped after them (with DynamoDB Local). */
export function fileScaleWorld(): () => ScaleWorld {
  let scale: ScaleWorld | undefined;
  beforeAll(async () => {
    benchEnvironment();
    scale = await scaleWorld();
  });
  afterAll(async () => {
    await scale?.drop();
    await stopDynamoDbLocal();
  });
  return () => {
    if (!scale) throw new Error('the scale world is made in beforeAll');
    return scale;
  };
}

/** The case sent `REPETITIONS + 1` times, each a 201; the first left out: each request's calls and price. */
export async function recordRepetitions(
  scale: ScaleWorld,
  c: DynamoCase,
): Promise<{ repetitions: RecordedCall[][]; costs: RequestCost[] }> {
  const repetitions: RecordedCall[][] = [];
  for (let i = 0; i < REPETITIONS + 1; i++) {
    const { calls, status, body } = await recordOne(scale, c, i);
    expect(status, body).toBe(201);
    if (i > 0) repetitions.push(calls);
  }
  return { repetitions, costs: repetitions.map(requestCost) };
}

/** Per request, the write units it put on each partition whose key starts with `prefix`. */
export const writesOn = (costs: readonly RequestCost[], prefix: string): Map<string, number>[] =>
  costs.map(
    (cost) => new Map([...cost.writePartitions].filter(([partition]) => partition.startsWith(prefix))),
  );

/**
 * Every partition of the table or an index that every request of the tenant writes (the hottest,
 * families of hash-chosen shards counted as their shards) allows ≥ 1,000 requests/s, and no
 * partition of the organization itself (`ORG#<org>`, or an index keyed by it) is written.
 */
export function expectNoSharedPartitionBelowTarget(
  model: CaseModel,
  costs: readonly RequestCost[],
  organization: string,
): void {
  expect(
    model.hotWrite?.ceiling ?? Number.POSITIVE_INFINITY,
    `hottest shared write partition ${model.hotWrite?.partition}`,
  ).toBeGreaterThanOrEqual(TARGET_PER_SECOND);
  for (const cost of costs) {
    expect([...cost.writePartitions.keys()].filter((p) => p.includes(`ORG#${organization}`))).toEqual([]);
  }
}
