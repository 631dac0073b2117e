/**
 * Issue 25, "writes that spread", for Create Product: its requests sent through the real handler
 * (the card's DynamoDB-work case, `test/cards/create-product.ts`), every DynamoDB call recorded and
 * priced by DynamoDB's rules (`recorder.ts`, `model.ts`), and the write units per partition that
 * every request of one tenant shares turned into the per-tenant ceiling (1,000 WCU/s per partition;
 * a family of hash-chosen shards, `LIST#PRODUCT#<org>#S<k>[#<view>]`, counts as 16 partitions).
 *
 * The product list's partitions must allow ≥ 1,000 creates/s per tenant. On the unsharded design
 * (every create wrote its 4 entries and a count shard into each of `LIST#PRODUCT#<org>` and its 3
 * views, 10 WCU on each) the same test fails at 100/s (see the commit that added it). So must every
 * partition a create writes that every create of the tenant shares, in the table and its indexes:
 * the product's unread GSI1 entry (`GSI1:ORG#<org>`, 1 WCU per KB of the product) is the last check
 * (no partition of the organization written at all): with the GSI1 keys put back on the sharded
 * layout the card's small product puts 1 WCU there per create, exactly 1,000/s, and that check
 * fails (a product of more than 1 KB would cap the tenant at 500/s or less).
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

describe('Create Product: per-tenant write ceiling from the real writes', () => {
  it('its product-list partitions, and every shared partition it writes, allow ≥ 1,000 creates/s per tenant', {
    timeout: 600_000,
  }, async () => {
    const [create] = (await modelledCases()).filter((c) => c.operation === 'create-product');
    if (!create) throw new Error('no DynamoDB-work case on the create-product card');
    const { repetitions, costs } = await recordRepetitions(scale(), create);
    const organization = scale().world.demo.organization_id;
    // The write units each request put on the tenant's product-list partitions (the whole list and
    // its views), by partition.
    const listWrites = writesOn(costs, `LIST#PRODUCT#${organization}`);
    const list = hottestShared(listWrites, PARTITION_WCU_PER_SECOND);
    const model = caseModel(create, repetitions);
    console.info(
      `Create Product: ${model.trueWru} WRU per request; product list: ${list?.partition} ${list?.units} WCU per request → ${Math.floor(list?.ceiling ?? 0)}/s per tenant; hottest shared partition of the request: ${model.hotWrite?.partition} ${model.hotWrite?.units} WCU → ${Math.floor(model.hotWrite?.ceiling ?? Number.POSITIVE_INFINITY)}/s`,
    );
    expect(list?.ceiling, `hottest product-list partition ${list?.partition}`).toBeGreaterThanOrEqual(
      TARGET_PER_SECOND,
    );
    expectNoSharedPartitionBelowTarget(model, costs, organization);
    // Each request wrote one shard, chosen by the new id, in the whole list and the 3 views it belongs
    // to (a monthly, unarchived product): over 16 random ids, more than one shard.
    const shardOf = (written: Map<string, number>) => {
      const shards = new Set(
        [...written.keys()].map((partition) => {
          const found = new RegExp(`^LIST#PRODUCT#${organization}#S([0-9]|1[0-5])(#|$)`).exec(partition);
          return found?.[1] ?? `unsharded ${partition}`;
        }),
      );
      expect([...shards]).toHaveLength(1);
      return [...shards][0];
    };
    for (const written of listWrites) {
      const [shard] = [shardOf(written)];
      expect([...written.keys()].sort()).toEqual(
        ['', '#is_archived=false', '#is_recurring=true', '#is_archived=false#is_recurring=true']
          .map((view) => `LIST#PRODUCT#${organization}#S${shard}${view}`)
          .sort(),
      );
    }
    expect(new Set(listWrites.map(shardOf)).size).toBeGreaterThan(1);
    expect(list?.shards).toBe(16);
  });
});
