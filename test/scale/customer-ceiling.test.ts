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
import { describe, expect, it } from 'vitest';
import {
  expectNoSharedPartitionBelowTarget,
  fileScaleWorld,
  recordRepetitions,
  TARGET_PER_SECOND,
  writesOn,
} from './ceiling.ts';
import { caseModel, hottestShared, PARTITION_WCU_PER_SECOND } from './model.ts';
import { modelledCases } from './run-model.ts';

const scale = fileScaleWorld();

describe('Create Customer: per-tenant write ceiling from the real writes', () => {
  it('its customer-list partitions, and every shared partition it writes, allow ≥ 1,000 creates/s per tenant', {
    timeout: 600_000,
  }, async () => {
    const [create] = (await modelledCases()).filter((c) => c.operation === 'create-customer');
    if (!create) throw new Error('no DynamoDB-work case on the create-customer card');
    const { repetitions, costs } = await recordRepetitions(scale(), create);
    const organization = scale().world.demo.organization_id;
    // The write units each request put on the tenant's customer-list partitions, by partition.
    const listWrites = writesOn(costs, `LIST#CUSTOMER#${organization}`);
    const list = hottestShared(listWrites, PARTITION_WCU_PER_SECOND);
    const model = caseModel(create, repetitions);
    console.info(
      `Create Customer: ${model.trueWru} WRU per request; customer list: ${list?.partition} ${list?.units} WCU per request → ${Math.floor(list?.ceiling ?? 0)}/s per tenant; hottest shared partition of the request: ${model.hotWrite?.partition} ${model.hotWrite?.units} WCU → ${Math.floor(model.hotWrite?.ceiling ?? Number.POSITIVE_INFINITY)}/s`,
    );
    expect(list?.ceiling).toBeGreaterThanOrEqual(TARGET_PER_SECOND);
    expectNoSharedPartitionBelowTarget(model, costs, organization);
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
