/**
 * The customer guards' move out of `ORG#<org>` (shared/data/customers.ts "Guards",
 * `npm run admin -- customer migrate-guards`, shared/data/customer-guard-migration.ts) on a table
 * holding customers as the code before wrote them (test/support/legacy-customers.ts: guards in
 * `ORG#<org>`, GSI1 keys, no `guard_layout`, the organization without its marker):
 *
 * - before the migration, uniqueness holds across both places (a create, or a change, cannot take a
 *   value an old guard holds) and every lookup (by external id, `email=`, a customer session, the
 *   meter aggregator's) finds a customer whose guard is only in the old place;
 * - a change of an old customer moves its guards and removes its GSI1 keys in its own transaction; a
 *   deletion releases its old guards;
 * - a run interrupted after two customers, run again to its end, then a third time moving nothing;
 *   the organization marked; then nothing of a create, change or delete is written in `ORG#<org>`;
 * - a change racing the migration, a lookup racing a move.
 * At every step each live customer holds exactly its two guards, in one place.
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { migrateCustomerGuards } from '#shared/data/customer-guard-migration.ts';
import { readGuards } from '#shared/data/customer-guards.ts';
import { customersByExternalId } from '#shared/data/customer-meters.ts';
import { type CustomerState, moveCustomerGuards, writeCustomerChange } from '#shared/data/customers.ts';
import type { CustomerRecord } from '#shared/data/records.ts';
import { CUSTOMER_GUARDS_MIGRATED, type Key, keys, legacyGuardKeys } from '#shared/data/table.ts';
import { insertLegacyCustomer } from '../support/legacy-customers.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
let shop: { token: string; organizationId: string };
beforeAll(async () => {
  world = await createWorld('customer-guard-migration');
  const organization = await createOrganization(world.admin, { name: 'Old guards', defaultCurrency: 'usd' });
  const owner = await createUser(world.admin, { email: `guards+${randomUUID()}@x.example` });
  await addMember(world.admin, organization.id, owner.id);
  const token = (
    await createPersonalAccessToken(world.admin, {
      userId: owner.id,
      scope: 'customers:read customers:write customer_sessions:write',
    })
  ).token;
  shop = { token, organizationId: organization.id };
});
afterAll(() => world?.drop());

const get = async (key: Key) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
    )
  ).Item;

/** Every customer guard left in the shop's partition (`ORG#<org>`). */
async function oldGuards(): Promise<Record<string, unknown>[]> {
  const found = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :guards)',
      ExpressionAttributeValues: { ':pk': keys.organization(shop.organizationId).PK, ':guards': 'CUSTOMERE' },
      ConsistentRead: true,
    }),
  );
  return found.Items ?? [];
}

/** The customer's two guards in exactly one place, its item marked (and without GSI1 keys) or not. */
async function expectGuards(customer: { id: string; email: string | null; external_id: string | null }) {
  const org = shop.organizationId;
  const email = customer.email as string;
  const external = customer.external_id as string;
  const stored = await get(keys.customer(customer.id));
  const moved = stored?.guard_layout === 'by_value';
  const [own, old] = [
    [keys.customerEmail(org, email), keys.customerExternalId(org, external)],
    [legacyGuardKeys.customerEmail(org, email), legacyGuardKeys.customerExternalId(org, external)],
  ];
  for (const key of moved ? own : old)
    expect((await get(key))?.customer_id, JSON.stringify(key)).toBe(customer.id);
  for (const key of moved ? old : own) expect(await get(key), JSON.stringify(key)).toBeUndefined();
  if (moved) {
    expect(stored).not.toHaveProperty('GSI1PK');
    expect(stored).not.toHaveProperty('GSI1SK');
  } else expect(stored?.GSI1PK).toBe(`ORG#${org}`);
  return moved;
}

const call = (method: string, path: string, body?: unknown) =>
  world.call(method, path, { token: shop.token, ...(body === undefined ? {} : { body }) });

const marked = async () =>
  (await get(keys.organization(shop.organizationId)))?.[CUSTOMER_GUARDS_MIGRATED.attribute] ===
  CUSTOMER_GUARDS_MIGRATED.value;

/** The partition keys the transactions of these functions' requests named (every action). */
function recordWrites(functions: readonly string[]): { partitions: string[]; stop(): void } {
  const partitions: string[] = [];
  const stacks = functions.map((name) => world.depsFor(name).table.doc.middlewareStack);
  for (const stack of stacks) {
    stack.add(
      (next) => async (args) => {
        const input = args.input as { TransactItems?: Record<string, { Key?: Key; Item?: Key }>[] };
        for (const action of input.TransactItems ?? []) {
          const body = Object.values(action)[0];
          const key = body?.Key ?? body?.Item;
          if (key) partitions.push(String(key.PK));
        }
        return next(args);
      },
      { step: 'initialize', name: 'recordGuardWrites' },
    );
  }
  const stop = () => {
    for (const stack of stacks) stack.remove('recordGuardWrites');
  };
  return { partitions, stop };
}

describe('customer migrate-guards', () => {
  it('old guards hold and are found until moved; a change moves them, a delete frees them; the run interrupted, resumed, run again; the organization marked', async () => {
    const old: CustomerRecord[] = [];
    for (let n = 0; n < 7; n++) old.push(await insertLegacyCustomer(world.table, shop.organizationId, n));
    const [first, second, third, ...rest] = old as [
      CustomerRecord,
      CustomerRecord,
      CustomerRecord,
      ...CustomerRecord[],
    ];
    // A customer the old code deleted: guards released, item kept with its GSI1 keys.
    const oldDeleted = await insertLegacyCustomer(world.table, shop.organizationId, 9);
    for (const key of [
      legacyGuardKeys.customerEmail(shop.organizationId, oldDeleted.email as string),
      legacyGuardKeys.customerExternalId(shop.organizationId, oldDeleted.external_id as string),
    ])
      await world.table.doc.send(new DeleteCommand({ TableName: world.table.name, Key: key }));
    await world.table.doc.send(
      new UpdateCommand({
        TableName: world.table.name,
        Key: keys.customer(oldDeleted.id),
        UpdateExpression: 'SET deleted_at = :now',
        ExpressionAttributeValues: { ':now': new Date().toISOString() },
      }),
    );
    expect(await marked()).toBe(false);

    // Uniqueness across both places: a create cannot take an address or an external id an old guard
    // holds (any case of the address), nor can a change of another customer.
    const taken = await call('POST', '/v1/customers/', { email: (first.email as string).toUpperCase() });
    expect(taken.status).toBe(422);
    expect(taken.body.detail[0].loc).toEqual(['body', 'email']);
    const takenExternal = await call('POST', '/v1/customers/', {
      email: `fresh-${randomUUID()}@example.com`,
      external_id: first.external_id,
    });
    expect(takenExternal.status).toBe(422);
    expect(takenExternal.body.detail[0].loc).toEqual(['body', 'external_id']);
    const fresh = await call('POST', '/v1/customers/', {
      email: `fresh-${randomUUID()}@example.com`,
      external_id: `fresh-${randomUUID()}`,
    });
    expect(fresh.status).toBe(201);
    await expectGuards(fresh.body);
    const stolen = await call('PATCH', `/v1/customers/${fresh.body.id}`, { email: second.email });
    expect(stolen.status).toBe(422);
    expect(stolen.body.detail[0].loc).toEqual(['body', 'email']);

    // Lookups find a customer whose guards are only in the old place.
    expect((await call('GET', `/v1/customers/external/${second.external_id}`)).body.id).toBe(second.id);
    const byEmail = await call('GET', `/v1/customers/?email=${encodeURIComponent(second.email as string)}`);
    expect(byEmail.body.items.map((c: { id: string }) => c.id)).toEqual([second.id]);
    const session = await call('POST', '/v1/customer-sessions/', {
      external_customer_id: second.external_id,
    });
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    expect(session.body.customer_id).toBe(second.id);
    const meters = await customersByExternalId(world.table, shop.organizationId, [
      second.external_id as string,
      'nobody',
    ]);
    expect([...meters]).toEqual([[second.external_id, second.id]]);
    for (const customer of old) expect(await expectGuards(customer)).toBe(false);

    // A change of an old customer (its name only) moves both guards and drops its GSI1 keys.
    const renamed = await call('PATCH', `/v1/customers/external/${first.external_id}`, { name: 'Moved' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).not.toHaveProperty('guard_layout');
    expect(await expectGuards(first)).toBe(true);
    // Its old address, taken again by another spelling, is still refused (now by its new guard).
    expect(
      (await call('POST', '/v1/customers/', { email: (first.email as string).toUpperCase() })).status,
    ).toBe(422);
    // A change of an old customer's address frees the old one in `ORG#<org>`: another takes it.
    const readdressed = await call('PATCH', `/v1/customers/${second.id}`, {
      email: `moved-${randomUUID()}@example.com`,
    });
    expect(readdressed.status).toBe(200);
    expect(await expectGuards(readdressed.body)).toBe(true);
    expect((await call('POST', '/v1/customers/', { email: second.email })).status).toBe(201);

    // A deletion of an old customer releases its old guards: its values are free again.
    expect((await call('DELETE', `/v1/customers/${third.id}`)).status).toBe(204);
    expect(
      await get(legacyGuardKeys.customerEmail(shop.organizationId, third.email as string)),
    ).toBeUndefined();
    expect((await get(keys.customer(third.id)))?.GSI1PK).toBeUndefined();
    expect(
      (await call('POST', '/v1/customers/', { email: third.email, external_id: third.external_id })).status,
    ).toBe(201);

    // Interrupted after two customers: those moved, the rest where they were, the organization not marked.
    const interrupted = await migrateCustomerGuards(world.table, { stopAfter: 2 });
    expect(interrupted).toMatchObject({ migrated: 2, busy: [], conflicts: [], organizations: 0 });
    expect(await marked()).toBe(false);
    // Which two the Scan met first is the table's order: among the rest and the deleted one.
    const itemMarked = async (id: string) => (await get(keys.customer(id)))?.guard_layout === 'by_value';
    const movedSoFar = await Promise.all([...rest, oldDeleted].map((customer) => itemMarked(customer.id)));
    expect(movedSoFar.filter(Boolean)).toHaveLength(2);
    for (const customer of rest) await expectGuards(customer);

    // Run again: the rest moved (the deleted customer's item only: it has no guards), the shop marked.
    const resumed = await migrateCustomerGuards(world.table);
    expect(resumed.busy).toEqual([]);
    expect(resumed.conflicts).toEqual([]);
    expect(resumed.unmarked).toEqual([]);
    // The rest, and the customer the old code deleted (its item only: GSI1 keys removed, marked).
    expect(resumed.migrated).toBe(rest.length - 2 + 1);
    expect(resumed.organizations).toBe(1);
    expect(await marked()).toBe(true);
    for (const customer of rest) expect(await expectGuards(customer)).toBe(true);
    for (const id of [third.id, oldDeleted.id]) {
      expect(await get(keys.customer(id))).toMatchObject({ guard_layout: 'by_value' });
      expect(await get(keys.customer(id))).not.toHaveProperty('GSI1PK');
    }
    expect(await oldGuards()).toEqual([]);

    // A third run finds nothing to move or mark.
    expect(await migrateCustomerGuards(world.table)).toEqual({
      migrated: 0,
      skipped: 0,
      busy: [],
      conflicts: [],
      organizations: 0,
      unmarked: [],
    });

    // Nothing lost: every live customer is found by its external id and its address.
    for (const customer of [first, ...rest]) {
      expect((await call('GET', `/v1/customers/external/${customer.external_id}`)).body.id).toBe(customer.id);
      const found = await call('GET', `/v1/customers/?email=${encodeURIComponent(customer.email as string)}`);
      expect(found.body.items.map((c: { id: string }) => c.id)).toEqual([customer.id]);
    }

    // Migrated: a create, a change of the address and a delete write nothing in `ORG#<org>`.
    const writes = recordWrites(['create-customer', 'update-customer', 'delete-customer']);
    try {
      const created = await call('POST', '/v1/customers/', {
        email: `after-${randomUUID()}@example.com`,
        external_id: `after-${randomUUID()}`,
      });
      expect(created.status).toBe(201);
      expect(
        (
          await call('PATCH', `/v1/customers/${created.body.id}`, {
            email: `again-${randomUUID()}@x.example`,
          })
        ).status,
      ).toBe(200);
      expect((await call('DELETE', `/v1/customers/${created.body.id}`)).status).toBe(204);
    } finally {
      writes.stop();
    }
    expect(writes.partitions.length).toBeGreaterThan(0);
    expect(writes.partitions.filter((pk) => pk.startsWith('ORG#'))).toEqual([]);
  });

  it('a change that read an old customer before the migration moved it is decided again; a lookup racing a move finds it', async () => {
    const customer = await insertLegacyCustomer(world.table, shop.organizationId, 40);
    const { wallet_count: _, ...before } = customer;
    expect((await migrateCustomerGuards(world.table)).migrated).toBe(1);
    const after = { ...before, name: 'Late', modified_at: new Date().toISOString() };
    await expect(writeCustomerChange(world.table, before as CustomerState, after)).rejects.toMatchObject({
      name: 'CustomerChanged',
    });
    expect(await expectGuards(customer)).toBe(true);

    // The other way round: the migration read the customer, then a change moved it first.
    const raced = await insertLegacyCustomer(world.table, shop.organizationId, 41);
    const { wallet_count: __, ...read } = raced;
    expect((await call('PATCH', `/v1/customers/${raced.id}`, { name: 'First' })).status).toBe(200);
    await expect(moveCustomerGuards(world.table, read as CustomerState)).rejects.toMatchObject({
      name: 'CustomerChanged',
    });
    expect(await expectGuards(raced)).toBe(true);
    expect((await migrateCustomerGuards(world.table)).migrated).toBe(0);

    // A lookup whose first batch read the new key just before the move (and the old one after it):
    // the move is done by the time that batch returns, and the new key read again finds it.
    const moving = await insertLegacyCustomer(world.table, shop.organizationId, 42);
    const { wallet_count: ___, ...state } = moving;
    const send = world.table.doc.send.bind(world.table.doc);
    let batches = 0;
    (world.table.doc as { send: unknown }).send = async (command: object) => {
      const result = await send(command as never);
      if (command.constructor.name === 'BatchGetCommand' && ++batches === 1) {
        (world.table.doc as { send: unknown }).send = send;
        await moveCustomerGuards(world.table, state as CustomerState);
      }
      return result;
    };
    try {
      const { holders } = await readGuards(world.table, [
        { organizationId: shop.organizationId, field: 'external_id', value: moving.external_id as string },
      ]);
      expect(holders).toEqual([moving.id]);
    } finally {
      (world.table.doc as { send: unknown }).send = send;
    }
  });
});
