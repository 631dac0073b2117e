/**
 * Issue 25, "writes that spread", for Create Customer: its requests sent through the real handler
 * (the card's DynamoDB-work case, `test/cards/create-customer.ts`), every DynamoDB call recorded and
 * priced by DynamoDB's rules (`recorder.ts`, `model.ts`), and the write units per partition that
 * every request of one tenant shares turned into the per-tenant ceiling (1,000 WCU/s per partition;
 * a family of hash-chosen shards, `LIST#CUSTOMER#<org>#S<k>`, counts as 16 partitions).
 *
 * The customer list's partitions must allow ≥ 1,000 creates/s per tenant. On the unsharded design
 * (main e067a30: every create wrote its 4 entries and a count shard into `LIST#CUSTOMER#<org>`) the
 * same test fails at about 100/s (see the commit that added it). So must every partition a create
 * writes that every create of the tenant shares, in the table and in its indexes: on the code
 * before the guards had partitions of their own (main c48f90a) it fails on `ORG#<org>` (its e-mail
 * and external-id guards, 4 WCU: 250/s). Those gone, the customer's unread GSI1 entry would leave
 * `GSI1:ORG#<org>` at 1 WCU per create, exactly 1,000/s: the last check (no partition of the
 * organization written at all) fails on it (shown with the GSI1 keys put back in `insertCustomer`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchEnvironment } from '#test/bench/handlers.ts';
import { caseModel, hottestShared, PARTITION_WCU_PER_SECOND, requestCost } from './model.ts';
import type { RecordedCall } from './recorder.ts';
import { modelledCases, recordOne, type ScaleWorld, scaleWorld, stopDynamoDbLocal } from './run-model.ts';

const REPETITIONS = 16;

let scale: ScaleWorld;
beforeAll(async () => {
  benchEnvironment();
  scale = await scaleWorld();
});
afterAll(async () => {
  await scale?.drop();
  await stopDynamoDbLocal();
});

describe('Create Customer: per-tenant write ceiling from the real writes', () => {
  it('its customer-list partitions, and every shared partition it writes, allow ≥ 1,000 creates/s per tenant', {
    timeout: 600_000,
  }, async () => {
    const [create] = (await modelledCases()).filter((c) => c.operation === 'create-customer');
    if (!create) throw new Error('no DynamoDB-work case on the create-customer card');
    const repetitions: RecordedCall[][] = [];
    for (let i = 0; i < REPETITIONS + 1; i++) {
      const { calls, status, body } = await recordOne(scale, create, i);
      expect(status, body).toBe(201);
      if (i > 0) repetitions.push(calls);
    }
    const organization = scale.world.demo.organization_id;
    const costs = repetitions.map(requestCost);
    // The write units each request put on the tenant's customer-list partitions, by partition.
    const listWrites = costs.map(
      (cost) =>
        new Map(
          [...cost.writePartitions].filter(([partition]) =>
            partition.startsWith(`LIST#CUSTOMER#${organization}`),
          ),
        ),
    );
    const list = hottestShared(listWrites, PARTITION_WCU_PER_SECOND);
    const model = caseModel(create, repetitions);
    console.info(
      `Create Customer: ${model.trueWru} WRU per request; customer list: ${list?.partition} ${list?.units} WCU per request → ${Math.floor(list?.ceiling ?? 0)}/s per tenant; hottest shared partition of the request: ${model.hotWrite?.partition} ${model.hotWrite?.units} WCU → ${Math.floor(model.hotWrite?.ceiling ?? Number.POSITIVE_INFINITY)}/s`,
    );
    expect(list?.ceiling).toBeGreaterThanOrEqual(1_000);
    // Every partition of the table or an index that every create of the tenant writes (the hottest
    // one, families of hash-chosen shards counted as their shards): none caps it below 1,000/s.
    expect(
      model.hotWrite?.ceiling ?? Number.POSITIVE_INFINITY,
      `hottest shared write partition ${model.hotWrite?.partition}`,
    ).toBeGreaterThanOrEqual(1_000);
    for (const cost of costs) {
      expect([...cost.writePartitions.keys()].filter((p) => p.includes(`ORG#${organization}`))).toEqual([]);
    }
    // Each request wrote one shard, chosen by the new id: over 16 random ids, more than one shard.
    for (const written of listWrites) {
      expect([...written.keys()]).toEqual([
        expect.stringMatching(new RegExp(`^LIST#CUSTOMER#${organization}#S([0-9]|1[0-5])$`)),
      ]);
    }
    expect(new Set(listWrites.map((written) => [...written.keys()][0])).size).toBeGreaterThan(1);
    expect(list?.shards).toBe(16);
  });
});
