/**
 * The delivery log's migration (`npm run admin -- webhook migrate-delivery-log`): rows as the code
 * before the sharded layout wrote them (an attempt with its payload, its four list entries each a
 * full copy, its lists' count shards and an expiry tombstone) are listed again after it, and gone in
 * their old form; a second run changes nothing.
 */
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { endpointDeliveriesOwner } from '#shared/data/deliveries.ts';
import { migrateDeliveryLog } from '#shared/data/delivery-log-migration.ts';
import type { DeliveryAttemptRecord } from '#shared/data/records.ts';
import { encodeTime, keys } from '#shared/data/table.ts';
import { envelope } from '#shared/webhooks/events.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('delivery-log-migration');
});
afterAll(async () => {
  await world?.drop();
});

const put = (item: Record<string, unknown>) =>
  world.table.doc.send(new PutCommand({ TableName: world.table.name, Item: item }));

/** One attempt as main's recordAttempt wrote it (shared/data/deliveries.ts before the sharded lists). */
async function legacyAttempt(organizationId: string, endpointId: string, n: number) {
  const at = new Date(Date.now() - n * 60_000).toISOString();
  const ttl = Math.floor(Date.parse(at) / 1000) + 90 * 86_400;
  const eventId = `00000000-0000-4000-8000-00000000000${n}`;
  const payload = envelope('customer.created', at, { id: `legacy-${n}` });
  const attempt: DeliveryAttemptRecord = {
    id: `10000000-0000-4000-8000-00000000000${n}`,
    webhook_event_id: eventId,
    endpoint_id: endpointId,
    organization_id: organizationId,
    type: 'customer.created',
    created_at: at,
    round: 1,
    attempt: 1,
    succeeded: true,
    http_code: 200,
    response: 'ok',
    duration_ms: 5,
    webhook_event: {
      id: eventId,
      event_id: eventId,
      endpoint_id: endpointId,
      organization_id: organizationId,
      type: 'customer.created',
      payload,
      created_at: at,
      modified_at: at,
      status: 'succeeded',
      round: 1,
      attempts: 1,
      last_http_code: 200,
    },
  };
  await put({
    ...keys.deliveryAttempt(eventId, 1, 1),
    expires_ttl: ttl,
    entity: 'delivery_attempt',
    ...attempt,
  });
  const endpointOwner = endpointDeliveriesOwner(organizationId, endpointId);
  for (const pk of [
    `LIST#DELIVERY#${organizationId}`,
    `LIST#DELIVERY#${organizationId}#succeeded=true`,
    `LIST#DELIVERY#${endpointOwner}`,
    `LIST#DELIVERY#${endpointOwner}#succeeded=true`,
  ]) {
    await put({
      PK: pk,
      SK: `created_at#${encodeTime(at)}#${attempt.id}`,
      entity: 'delivery_entry',
      expires_ttl: ttl,
      ...attempt,
    });
    await put({ PK: pk, SK: `#COUNT#${n}`, entry_count: 1 });
  }
  return { attempt, payload };
}

it('lists the attempts written before the sharded layout once migrated, deletes their old rows, and runs twice safely', async () => {
  const organizationId = world.demo.other_organization.organization_id;
  const endpointId = world.demo.other_organization.webhook_endpoint_id;
  const one = await legacyAttempt(organizationId, endpointId, 1);
  const two = await legacyAttempt(organizationId, endpointId, 2);
  await put({
    PK: `LIST#DELIVERY#${organizationId}`,
    SK: '#EXPIRED#created_at#x#y',
    entity: 'delivery_entry_expired',
  });
  const list = (query = '') =>
    world.call('GET', `/v1/webhooks/deliveries${query}`, {
      token: world.demo.other_organization.personal_access_token,
    });
  const before = await list();
  expect(before.status).toBe(200);

  const report = await migrateDeliveryLog(world.table, new Date());
  expect(report).toEqual({ migrated: 2, skipped: 0, deleted: 4 * 2 + 4 * 2 + 1 });
  const after = await list();
  expect(after.body.pagination.total_count).toBe(before.body.pagination.total_count + 2);
  const shown = (after.body.items as { id: string; webhook_event: { payload: string } }[]).filter((item) =>
    [one.attempt.id, two.attempt.id].includes(item.id),
  );
  expect(shown.map((item) => [item.id, item.webhook_event.payload])).toEqual([
    [one.attempt.id, one.payload],
    [two.attempt.id, two.payload],
  ]);
  expect(
    (await list(`?endpoint_id=${endpointId}&succeeded=true`)).body.pagination.total_count,
  ).toBeGreaterThanOrEqual(2);
  const leftovers = await world.table.doc.send(
    new ScanCommand({
      TableName: world.table.name,
      FilterExpression: 'begins_with(PK, :list) AND (begins_with(SK, :old) OR begins_with(SK, :tomb))',
      ExpressionAttributeValues: { ':list': 'LIST#DELIVERY#', ':old': 'created_at#', ':tomb': '#EXPIRED#' },
    }),
  );
  expect(leftovers.Items ?? []).toEqual([]);

  expect(await migrateDeliveryLog(world.table, new Date())).toEqual({ migrated: 0, skipped: 0, deleted: 0 });
  expect((await list()).body.pagination.total_count).toBe(after.body.pagination.total_count);
});
