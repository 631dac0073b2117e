/**
 * Issue 25, "writes that spread", for Create Subscription: signups of one tenant on one product (the
 * freemium case: every signup through one free plan, each for its own new customer) sent through the
 * real handler, then the stream's projection of each (`projectSubscriptionCounts`, what the relay
 * runs on the subscription's INSERT: its four lists' count shards and its marker), every DynamoDB call
 * recorded and priced by DynamoDB's rules (`recorder.ts`, `model.ts`), and the write units per
 * partition that every signup of the tenant shares turned into the per-tenant ceiling (1,000 WCU/s
 * per partition; a family of hash-chosen shards `…#S<k>` counts as its 16 partitions).
 *
 * Every partition of the table and its indexes that every signup writes must allow ≥ 1,000
 * signups/s; so must the organization's and the product's subscription lists, whose entries, count
 * shards and segment registry items every signup of the tenant (or of the product) adds to. On the
 * unsharded lists (main 5d96732: 4 entries of each signup in `LIST#SUBSCRIPTION#<org>` and 4 in
 * `LIST#SUBSCRIPTION-PRODUCT#<org>#<product>`, plus the projection's count shard in each) the test
 * fails at about 100/s (see the commit that added it). The due index (`GSI2`, `DUE#<k>`, 4 shards
 * by id) is checked too: every live subscription has an entry there.
 */

import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { record } from '#shared/data/records.ts';
import { projectSubscriptionCounts } from '#shared/data/subscription-counts.ts';
import { DUE_SHARDS, keys } from '#shared/data/table.ts';
import type { DynamoCase } from '#test/bench/work-kit.ts';
import { nextSequence } from '#test/support/subscription-counts.ts';
import {
  expectNoSharedPartitionBelowTarget,
  fileScaleWorld,
  recordRepetitions,
  TARGET_PER_SECOND,
  writesOn,
} from './ceiling.ts';
import { caseModel, hottestShared, PARTITION_WCU_PER_SECOND } from './model.ts';

const scale = fileScaleWorld();

/** One signup: a new customer (made in the uncounted `prepare`), its subscription, its projection. */
function signupCase(): DynamoCase {
  const customers: string[] = [];
  return {
    key: 'signup',
    label: 'Create Subscription (a new customer, the free product) and its stream projection',
    status: 201,
    target: 3,
    prepare: async (world, i) => {
      const created = await world.call('create-customer', 'POST', '/v1/customers/', {
        token: world.demo.personal_access_token,
        body: { email: `ceiling-${i}-${crypto.randomUUID()}@example.com` },
      });
      if (created.status !== 201) throw new Error(`customer: ${created.status} ${created.body}`);
      customers[i] = JSON.parse(created.body ?? '{}').id;
    },
    send: async (world, i) => {
      const reply = await world.call('create-subscription', 'POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: { product_id: world.demo.free_product_id, customer_id: customers[i] },
      });
      if (reply.status !== 201) return reply;
      // The relay's work for this signup, as it runs on the subscription's INSERT record.
      const stored = await world.table.doc.send(
        new GetCommand({
          TableName: world.table.name,
          Key: keys.subscription(JSON.parse(reply.body ?? '{}').id),
          ConsistentRead: true,
        }),
      );
      await projectSubscriptionCounts(world.table, [
        { sequence: nextSequence(), subscription: record(stored.Item ?? {}) },
      ]);
      return reply;
    },
  };
}

describe('Create Subscription: per-tenant write ceiling from the real writes', () => {
  it('every shared partition a signup writes (its lists, their counts, the indexes) allows ≥ 1,000 signups/s per tenant', {
    timeout: 600_000,
  }, async () => {
    const signup = signupCase();
    const { repetitions, costs } = await recordRepetitions(scale(), signup);
    const organization = scale().world.demo.organization_id;
    const product = scale().world.demo.free_product_id;
    const organizationList = hottestShared(
      writesOn(costs, `LIST#SUBSCRIPTION#${organization}`),
      PARTITION_WCU_PER_SECOND,
    );
    const productList = hottestShared(
      writesOn(costs, `LIST#SUBSCRIPTION-PRODUCT#${organization}#${product}`),
      PARTITION_WCU_PER_SECOND,
    );
    const model = caseModel({ ...signup, operation: 'create-subscription' }, repetitions);
    // The due index: one entry per live subscription on one of its DUE_SHARDS partitions, by id.
    const due = costs.map((cost) =>
      [...cost.writePartitions].filter(([partition]) => partition.startsWith('GSI2:DUE#')),
    );
    const dueUnits = due.reduce((sum, writes) => sum + writes.reduce((s, [, u]) => s + u, 0), 0) / due.length;
    const line = (name: string, hot: typeof model.hotWrite, unit = 'WCU') =>
      `${name}: ${hot?.partition} ${hot?.units} ${unit} per signup → ${Math.floor(hot?.ceiling ?? Number.POSITIVE_INFINITY)}/s`;
    console.info(
      [
        `Create Subscription + projection: ${model.trueWru} WRU per signup, ${model.roundTrips} round trips`,
        line('organization list', organizationList),
        line('product list', productList),
        line('hottest shared partition', model.hotWrite),
        `due index: ${dueUnits} WCU per signup over ${DUE_SHARDS} shards → ${Math.floor((PARTITION_WCU_PER_SECOND * DUE_SHARDS) / dueUnits)}/s`,
        line('hottest shared read partition (at 3,000 RCU/s)', model.hotRead, 'RCU'),
      ].join('\n'),
    );
    expect(organizationList?.ceiling, organizationList?.partition).toBeGreaterThanOrEqual(TARGET_PER_SECOND);
    expect(productList?.ceiling, productList?.partition).toBeGreaterThanOrEqual(TARGET_PER_SECOND);
    expect((PARTITION_WCU_PER_SECOND * DUE_SHARDS) / dueUnits).toBeGreaterThanOrEqual(TARGET_PER_SECOND);
    // Each signup wrote one shard of each shared list, chosen by the new id: over 16 random ids,
    // more than one shard; and not the unsharded partitions.
    for (const [prefix, family] of [
      [`LIST#SUBSCRIPTION#${organization}`, organizationList],
      [`LIST#SUBSCRIPTION-PRODUCT#${organization}#${product}`, productList],
    ] as const) {
      const written = writesOn(costs, prefix).map((partitions) => [...partitions.keys()]);
      for (const partitions of written) {
        expect(partitions).toEqual([expect.stringMatching(/#S([0-9]|1[0-5])$/)]);
      }
      expect(new Set(written.map(([partition]) => partition)).size).toBeGreaterThan(1);
      expect(family?.shards).toBe(16);
    }
    // Every shared partition of the table and its indexes, and none of the organization itself.
    expectNoSharedPartitionBelowTarget(model, costs, organization);
  });
});
