/**
 * The subscription lists' counts kept from the table stream (shared/data/subscription-counts.ts):
 * a list never skips a subscription whose count has not caught up; the projection counts each
 * change once, however often a batch is handed over, in whatever order its records come again; the
 * relay runs it under its own IAM policy; and with the stream on, a new subscription is counted
 * within the freshness the docs promise (waited for with a deadline, never a fixed time).
 */
// On a DynamoDB Local of its own: its freshness test reads its table's stream (test/support/private-engine.ts).

import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler as createRelay } from '#functions/webhook-relay/handler.ts';
import {
  COUNTED_SORT_KEY,
  projectSubscriptionCounts,
  type SubscriptionImage,
} from '#shared/data/subscription-counts.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import { createCustomerIn } from '#shared/services/create-customer.ts';
import { startTestPipeline } from '../support/pipeline.ts';
import { usePrivateEngine } from '../support/private-engine.ts';
import { nextSequence, storedSubscriptions } from '../support/subscription-counts.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type World } from '../support/world.ts';

usePrivateEngine();

let world: World;
beforeAll(async () => {
  world = await createWorld('subscription-counts');
});
afterAll(() => world?.drop());

/** A customer of the demo organization with `n` subscriptions to the free product, none counted yet. */
async function customerWith(n: number) {
  const customer = await createCustomerIn(world.admin, world.demo.organization_id, {
    email: `counts-${Math.random().toString(36).slice(2)}@example.com`,
  });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const reply = await world.call('POST', '/v1/subscriptions/', {
      token: world.demo.personal_access_token,
      body: { product_id: world.demo.free_product_id, customer_id: customer.id },
    });
    expect(reply.status).toBe(201);
    ids.push(reply.body.id);
  }
  return { customer: customer.id, ids };
}

const listOf = (customer: string, page: number, limit: number, extra = '') =>
  world.call('GET', `/v1/subscriptions/?customer_id=${customer}&page=${page}&limit=${limit}${extra}`, {
    token: world.demo.personal_access_token,
  });

/** The count of a customer's list as its shards hold it (the registry items carry none). */
async function customerCount(customer: string): Promise<Record<string, number>> {
  const stored = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :count)',
      ExpressionAttributeValues: {
        ':pk': `LIST#SUBSCRIPTION-CUSTOMER#${world.demo.organization_id}#${customer}`,
        ':count': '#COUNT#',
      },
      ConsistentRead: true,
    }),
  );
  const bySegment: Record<string, number> = {};
  for (const item of stored.Items ?? []) {
    if (item.entry_count === undefined) continue;
    const status = String((item.segment_values as { status?: { choice?: string } }).status?.choice);
    bySegment[status] = (bySegment[status] ?? 0) + Number(item.entry_count);
  }
  return Object.fromEntries(Object.entries(bySegment).filter(([, n]) => n !== 0));
}

/** The stream images of these subscriptions as stored now, each with a fresh (higher) sequence number. */
async function imagesOf(ids: readonly string[]) {
  return (await storedSubscriptions(world.table))
    .filter((s) => ids.includes(s.id))
    .map((subscription) => ({
      sequence: nextSequence(),
      subscription: subscription as SubscriptionImage['subscription'],
    }));
}

describe('lists while the counts lag', () => {
  it('every page shows every subscription before its count caught up; total is exact once a page reads a segment to its end', async () => {
    const { customer, ids } = await customerWith(3);
    expect(await customerCount(customer)).toEqual({});
    const first = await listOf(customer, 1, 2);
    const second = await listOf(customer, 2, 2);
    expect(first.status).toBe(200);
    // Page 1 read 2 of 3 entries (and one more to complete its boundary): at least what it saw.
    expect(first.body.pagination.total_count).toBeGreaterThanOrEqual(2);
    // Page 2 lies past the counts' end (no count yet) and still holds the third one.
    expect(second.body.items).toHaveLength(1);
    expect(second.body.pagination).toEqual({ total_count: 3, max_page: 2 });
    expect([...first.body.items, ...second.body.items].map((s: { id: string }) => s.id).sort()).toEqual(
      [...ids].sort(),
    );
    // A revoke moves it to the canceled segment at once, counted or not.
    const revoked = await world.call('DELETE', `/v1/subscriptions/${ids[0]}`, {
      token: world.demo.personal_access_token,
    });
    expect(revoked.status).toBe(200);
    const ended = await listOf(customer, 1, 10, '&active=false');
    expect(ended.body.items.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
    expect(ended.body.pagination.total_count).toBe(1);
    const live = await listOf(customer, 1, 10, '&active=true');
    expect(live.body.pagination.total_count).toBe(2);
  });
});

describe('the projection', () => {
  it('counts each subscription once however often its batch comes, and an older image after a newer one changes nothing', async () => {
    const { customer, ids } = await customerWith(2);
    const created = await imagesOf(ids);
    await projectSubscriptionCounts(world.table, created);
    expect(await customerCount(customer)).toEqual({ active: 2 });
    // The same batch again (a retried invocation), and two runs of it at once.
    await projectSubscriptionCounts(world.table, created);
    await Promise.all([
      projectSubscriptionCounts(world.table, created),
      projectSubscriptionCounts(world.table, created),
    ]);
    expect(await customerCount(customer)).toEqual({ active: 2 });

    const revoked = await world.call('DELETE', `/v1/subscriptions/${ids[0]}`, {
      token: world.demo.personal_access_token,
    });
    expect(revoked.status).toBe(200);
    const afterRevoke = await imagesOf([ids[0] as string]);
    // A batch holding both the create's and the revoke's records, out of order: the newest counts.
    await projectSubscriptionCounts(world.table, [...afterRevoke, ...created]);
    expect(await customerCount(customer)).toEqual({ active: 1, canceled: 1 });
    // Replayed later: the create's image (an older sequence) does not move it back; nor the revoke's again.
    await projectSubscriptionCounts(world.table, created);
    expect(await customerCount(customer)).toEqual({ active: 1, canceled: 1 });
    await projectSubscriptionCounts(world.table, afterRevoke);
    expect(await customerCount(customer)).toEqual({ active: 1, canceled: 1 });
    // Each counted subscription records where it is counted, with the sequence counted.
    const marker = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk AND SK = :sk',
        ExpressionAttributeValues: { ':pk': `SUBSCRIPTION#${ids[0]}`, ':sk': COUNTED_SORT_KEY },
      }),
    );
    expect(marker.Items?.[0]).toMatchObject({
      counted: { status: 'canceled' },
      sequence: afterRevoke[0]?.sequence.padStart(40, '0'),
    });
  });

  // A table written before the counts came from the stream: its subscriptions were counted by their
  // own transactions, and have no marker and no `counts_change`. No backfill is needed: this code's
  // first change of one records where it was counted (`counted_from`), and the projection moves it
  // from there. (Without it, shown by hand: the revoke counted +1 canceled with no -1 active, the
  // cancel at period end +1 active: { active: 3, canceled: 1 }.)
  it('subscriptions of a table older than the stream projection (no marker): their changes are counted from where their transactions counted them', async () => {
    const { customer, ids } = await customerWith(3);
    await projectSubscriptionCounts(world.table, await imagesOf(ids));
    expect(await customerCount(customer)).toEqual({ active: 3 });
    // Made old: as the transactional-count code left them (counted, no marker, no `counts_change`).
    for (const id of ids) {
      await world.table.doc.send(
        new DeleteCommand({
          TableName: world.table.name,
          Key: { PK: `SUBSCRIPTION#${id}`, SK: COUNTED_SORT_KEY },
        }),
      );
      await world.table.doc.send(
        new UpdateCommand({
          TableName: world.table.name,
          Key: { PK: `SUBSCRIPTION#${id}`, SK: `SUBSCRIPTION#${id}` },
          UpdateExpression: 'REMOVE counts_change',
        }),
      );
    }
    const [revokedId, canceledId, untouchedId] = ids as [string, string, string];
    const pat = { token: world.demo.personal_access_token };
    expect((await world.call('DELETE', `/v1/subscriptions/${revokedId}`, pat)).status).toBe(200);
    expect(
      (
        await world.call('PATCH', `/v1/subscriptions/${canceledId}`, {
          ...pat,
          body: { cancel_at_period_end: true },
        })
      ).status,
    ).toBe(200);
    const changed = await imagesOf([revokedId, canceledId]);
    expect(changed.map((image) => image.subscription.counted_from?.status)).toEqual(['active', 'active']);
    await projectSubscriptionCounts(world.table, changed);
    expect(await customerCount(customer)).toEqual({ active: 2, canceled: 1 });
    // A later change of this code: from the marker now (its `counted_from` is gone).
    expect((await world.call('DELETE', `/v1/subscriptions/${canceledId}`, pat)).status).toBe(200);
    const again = await imagesOf([canceledId]);
    expect(again[0]?.subscription.counted_from).toBeUndefined();
    await projectSubscriptionCounts(world.table, again);
    expect(await customerCount(customer)).toEqual({ active: 1, canceled: 2 });
    // A write of the older code (during a deploy's roll-out) moved the counts in its own transaction:
    // its image (`change_id` moved on, `counts_change` left behind) is recorded where it is, not moved.
    const [untouched] = await imagesOf([untouchedId]);
    const olderWrite = {
      sequence: nextSequence(),
      subscription: {
        ...(untouched?.subscription as NonNullable<typeof untouched>['subscription']),
        status: 'canceled' as const,
        change_id: 'older-code',
      },
    };
    await projectSubscriptionCounts(world.table, [olderWrite]);
    expect(await customerCount(customer)).toEqual({ active: 1, canceled: 2 });
    const marker = await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: { PK: `SUBSCRIPTION#${untouchedId}`, SK: COUNTED_SORT_KEY },
      }),
    );
    expect(marker.Item?.counted).toMatchObject({ status: 'canceled' });
  });

  it('the relay runs it from the stream records of subscriptions, under its own IAM policy', async () => {
    const { customer, ids } = await customerWith(2);
    const relay = createRelay({
      ...world.depsFor('webhook-relay'),
      queue: new LocalQueue({ visibilityTimeoutSeconds: 30 }),
    });
    const stored = (await storedSubscriptions(world.table)).filter((s) => ids.includes(s.id));
    const event: DynamoDBStreamEvent = {
      Records: stored.map((subscription) => ({
        eventName: 'INSERT',
        dynamodb: {
          Keys: marshall({ PK: `SUBSCRIPTION#${subscription.id}`, SK: `SUBSCRIPTION#${subscription.id}` }),
          NewImage: marshall(
            { PK: `SUBSCRIPTION#${subscription.id}`, SK: `SUBSCRIPTION#${subscription.id}`, ...subscription },
            { removeUndefinedValues: true },
          ) as never,
          SequenceNumber: nextSequence(),
        },
      })) as DynamoDBStreamEvent['Records'],
    };
    await relay(event);
    await relay(event);
    expect(await customerCount(customer)).toEqual({ active: 2 });
  });
});

describe('freshness', () => {
  it('with the stream on, a new subscription is counted by the relay (the local pipeline, the real relay; a 30 s deadline for a hang)', async () => {
    const pipeline = await startTestPipeline(world);
    try {
      const { customer } = await customerWith(1);
      // The docs promise seconds on AWS; 30 s here is a deadline for a hang on a loaded machine, not a wait.
      await waitFor(
        async () => (await customerCount(customer)).active === 1,
        30_000,
        'the new subscription counted by the stream projection',
      );
      expect(pipeline.errors).toEqual([]);
    } finally {
      await pipeline.stop();
    }
  });
});
