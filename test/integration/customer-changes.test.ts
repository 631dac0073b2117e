/**
 * Update and Delete Customer (by id and by external id) against DynamoDB Local under the functions'
 * deployed policies: every rule and error, the guards and list entries moved in the customer's own
 * transaction (nothing half-written), races, round trips, and what a deleted customer can no longer
 * do: get a subscription or a session, or use the sessions it had.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomerSession, createWallet } from '#scripts/admin/commands.ts';
import { getCustomer } from '#shared/data/catalog.ts';
import { readCustomerEntries } from '#shared/data/customers.ts';
import { type Key, keys } from '#shared/data/table.ts';
import { type OperationName, operations } from '#shared/operations.ts';
import { documentedReply } from '../support/contract.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('customer-changes');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const unique = (label: string) => `${label}+${randomUUID().slice(0, 8)}@example.com`;
const create = async (body: Record<string, unknown> = {}, token = pat()) => {
  const reply = await world.call('POST', '/v1/customers/', { token, body: { email: unique('c'), ...body } });
  if (reply.status !== 201) throw new Error(`Create Customer answered ${reply.status}`);
  return reply.body as { id: string; email: string; external_id: string | null; modified_at: string | null };
};
const get = (id: string) => world.call('GET', `/v1/customers/${id}`, { token: pat() });
const patch = (id: string, body: unknown, token = pat()) =>
  world.call('PATCH', `/v1/customers/${id}`, { token, body });
const patchExternal = (externalId: string, body: unknown, token = pat()) =>
  world.call('PATCH', `/v1/customers/external/${encodeURIComponent(externalId)}`, { token, body });
const remove = (id: string, query = '', token = pat()) =>
  world.call('DELETE', `/v1/customers/${id}${query}`, { token });
const removeExternal = (externalId: string, query = '', token = pat()) =>
  world.call('DELETE', `/v1/customers/external/${encodeURIComponent(externalId)}${query}`, { token });

const documented = documentedReply;

const stored = async (key: Key) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
    )
  ).Item;

/** The customer's entries in its organization's list, by field. */
async function entriesOf(id: string, organizationId = world.demo.organization_id) {
  const fields = ['created_at', 'email', 'name', 'external_id'];
  const found = await Promise.all(
    fields.map((field) => readCustomerEntries(world.table, [organizationId], `${field}#`)),
  );
  return Object.fromEntries(fields.map((field, i) => [field, found[i]?.filter((e) => e.id === id) ?? []]));
}

const listTotal = async () =>
  (await world.call('GET', '/v1/customers/?limit=1', { token: pat() })).body.pagination.total_count as number;

describe('PATCH /v1/customers/{id}', () => {
  it('changes the fields sent (3 round trips); Get Customer and the list show the change at once', async () => {
    const customer = await create({ name: 'Before', metadata: { keep: 'no' } });
    world.resetCount();
    const reply = documented(
      'updateCustomer',
      await patch(customer.id, {
        name: 'After',
        locale: 'pt-BR',
        metadata: { tier: 'gold', seats: 3 },
        billing_address: { country: 'FR', city: 'Paris' },
      }),
    );
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: customer.id,
      email: customer.email,
      name: 'After',
      locale: 'pt-BR',
      metadata: { tier: 'gold', seats: 3 },
      billing_address: {
        line1: null,
        line2: null,
        postal_code: null,
        city: 'Paris',
        state: null,
        country: 'FR',
      },
    });
    expect(Date.parse(reply.body.modified_at)).toBeGreaterThan(0);
    expect((await get(customer.id)).body).toEqual(reply.body);
    // Its entries moved with it: one per field, each holding the customer as changed.
    const entries = await entriesOf(customer.id);
    for (const [field, found] of Object.entries(entries)) {
      expect(found, field).toHaveLength(1);
      expect(found[0]?.name, field).toBe('After');
    }
    const byName = await world.call('GET', '/v1/customers/?query=after&limit=100', { token: pat() });
    expect(byName.body.items.map((c: { id: string }) => c.id)).toContain(customer.id);
    expect((await world.call('GET', '/v1/customers/?query=before', { token: pat() })).body.items).toEqual([]);
  });

  it('an empty change writes nothing (2 round trips) and leaves modified_at as it was', async () => {
    const customer = await create();
    world.resetCount();
    const reply = await patch(customer.id, { type: 'individual', tax_id: null });
    expect(world.roundTrips()).toBe(2);
    expect(reply.body).toEqual((await get(customer.id)).body);
    expect(reply.body.modified_at).toBeNull();
  });

  it('a new e-mail address takes its guard and frees the old one in the same transaction', async () => {
    const customer = await create();
    const next = unique('moved');
    const reply = await patch(customer.id, { email: next });
    expect(reply.body.email).toBe(next);
    expect(await stored(keys.customerEmail(world.demo.organization_id, customer.email))).toBeUndefined();
    expect((await stored(keys.customerEmail(world.demo.organization_id, next)))?.customer_id).toBe(
      customer.id,
    );
    // The old address is free at once; the new one is taken.
    expect(
      (await world.call('POST', '/v1/customers/', { token: pat(), body: { email: customer.email } })).status,
    ).toBe(201);
    const taken = await world.call('POST', '/v1/customers/', {
      token: pat(),
      body: { email: next.toUpperCase() },
    });
    expect(taken.body.detail[0].loc).toEqual(['body', 'email']);
    // Only the new address finds it.
    const byEmail = (email: string) =>
      world.call('GET', `/v1/customers/?email=${encodeURIComponent(email)}`, { token: pat() });
    expect((await byEmail(next)).body.items.map((c: { id: string }) => c.id)).toEqual([customer.id]);
  });

  it('a new address resets email_verified; another spelling of the same address does not', async () => {
    const customer = await create();
    const verify = () =>
      world.table.doc.send(
        new UpdateCommand({
          TableName: world.table.name,
          Key: keys.customer(customer.id),
          UpdateExpression: 'SET email_verified = :true',
          ExpressionAttributeValues: { ':true': true },
        }),
      );
    await verify();
    const respelled = await patch(customer.id, { email: customer.email.toUpperCase() });
    expect(respelled.body).toMatchObject({ email: customer.email.toUpperCase(), email_verified: true });
    // The guard stays (one address, compared case-insensitively).
    expect((await stored(keys.customerEmail(world.demo.organization_id, customer.email)))?.customer_id).toBe(
      customer.id,
    );
    const moved = await patch(customer.id, { email: unique('new') });
    expect(moved.body.email_verified).toBe(false);
  });

  it('an address taken in the organization is a 422 at body.email, and nothing is written', async () => {
    const [one, two] = [await create(), await create({ name: 'Two' })];
    const before = await get(two.id);
    const reply = documented(
      'updateCustomer',
      await patch(two.id, { email: one.email.toUpperCase(), name: 'X' }),
    );
    expect(reply.status).toBe(422);
    expect(reply.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [
        {
          loc: ['body', 'email'],
          msg: 'A customer with this email address already exists.',
          type: 'value_error',
          input: one.email.toUpperCase(),
        },
      ],
    });
    expect((await get(two.id)).body).toEqual(before.body);
    expect((await stored(keys.customerEmail(world.demo.organization_id, two.email)))?.customer_id).toBe(
      two.id,
    );
    expect((await entriesOf(two.id)).name?.[0]?.name).toBe('Two');
  });

  it('external_id: set once (it then finds the customer and is unique), never changed or cleared', async () => {
    const customer = await create();
    const externalId = `set-${randomUUID()}`;
    const set = await patch(customer.id, { external_id: externalId });
    expect(set.body.external_id).toBe(externalId);
    const found = await world.call('GET', `/v1/customers/external/${externalId}`, { token: pat() });
    expect(found.body.id).toBe(customer.id);
    // The same value again is no change.
    expect((await patch(customer.id, { external_id: externalId })).status).toBe(200);
    for (const value of [`other-${randomUUID()}`, null]) {
      const refused = documented('updateCustomer', await patch(customer.id, { external_id: value }));
      expect(refused.status).toBe(422);
      expect(refused.body.detail).toEqual([
        {
          loc: ['body', 'external_id'],
          msg: 'Customer external ID cannot be updated.',
          type: 'value_error',
          input: value,
        },
      ]);
    }
    // Another customer cannot take it.
    const other = await create();
    const taken = await patch(other.id, { external_id: externalId });
    expect(taken.body.detail[0]).toMatchObject({
      loc: ['body', 'external_id'],
      msg: 'A customer with this external ID already exists.',
    });
    expect((await get(other.id)).body.external_id).toBeNull();
  });

  it('billing_address cannot be reset to null once set; a tax id is refused; every fault is reported', async () => {
    const customer = await create();
    expect((await patch(customer.id, { billing_address: null })).status).toBe(200);
    expect(
      (await patch(customer.id, { billing_address: { country: 'DE' } })).body.billing_address.country,
    ).toBe('DE');
    const reply = await patch(customer.id, { billing_address: null, tax_id: 'DE123456789' });
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toEqual([
      {
        loc: ['body', 'billing_address'],
        msg: 'Customer billing address cannot be reset to null once set.',
        type: 'value_error',
        input: null,
      },
      {
        loc: ['body', 'tax_id'],
        msg: 'Tax IDs are not supported by this API.',
        type: 'value_error',
        input: 'DE123456789',
      },
    ]);
    expect((await get(customer.id)).body.billing_address.country).toBe('DE');
  });

  it('refuses malformed changes with the schema’s 422 (nothing written), and needs customers:write', async () => {
    const customer = await create();
    for (const body of [
      { email: null },
      { email: 'not-an-address' },
      { type: 'team' },
      { name: 'bell\u0007' },
      { name: '' },
      { locale: 'english please' },
      { billing_address: { city: 'Paris' } },
      { billing_address: { country: 'XX' } },
      { metadata: { k: null } },
      { external_id: '' },
      [],
    ]) {
      const reply = documented('updateCustomer', await patch(customer.id, body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
    }
    expect((await get(customer.id)).body.modified_at).toBeNull();
    expect((await patch('not-a-uuid', {})).body.detail[0].loc).toEqual(['path', 'id']);
    const read = await world.call('PATCH', `/v1/customers/${customer.id}`, {
      token: world.demo.personal_access_token_without_scopes,
      body: {},
    });
    expect(read.status).toBe(403);
    const noType = await world.call('PATCH', `/v1/customers/${customer.id}`, {
      token: pat(),
      body: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(noType.status).toBe(415);
  });

  it('another organization’s, a deleted and an unknown customer are the same 404, and stay as they were', async () => {
    const unknown = documented('updateCustomer', await patch(randomUUID(), { name: 'x' }));
    expect(unknown.status).toBe(404);
    const foreign = world.demo.other_organization.customer_id;
    expect((await patch(foreign, { name: 'Mallory' })).body).toEqual(unknown.body);
    expect((await getCustomer(world.table, foreign))?.name).not.toBe('Mallory');
    const gone = await create();
    await remove(gone.id);
    expect((await patch(gone.id, { name: 'x' })).body).toEqual(unknown.body);
  });

  it('of concurrent changes of two customers to one address exactly one succeeds', async () => {
    const contenders = await Promise.all(Array.from({ length: 6 }, () => create()));
    const address = unique('contested');
    const replies = await Promise.all(contenders.map((c) => patch(c.id, { email: address })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 422)).toHaveLength(5);
    const winner = replies.find((r) => r.status === 200)?.body.id;
    expect((await stored(keys.customerEmail(world.demo.organization_id, address)))?.customer_id).toBe(winner);
    // Each loser kept its own address and guard.
    for (const c of contenders.filter((c) => c.id !== winner)) {
      expect((await stored(keys.customerEmail(world.demo.organization_id, c.email)))?.customer_id).toBe(c.id);
    }
  });

  it('a change and a create racing for one address: exactly one gets it', async () => {
    for (let round = 0; round < 4; round++) {
      const customer = await create();
      const address = unique('race');
      const [changed, created] = await Promise.all([
        patch(customer.id, { email: address }),
        world.call('POST', '/v1/customers/', { token: pat(), body: { email: address } }),
      ]);
      expect([changed.status, created.status].sort()).toEqual(
        changed.status === 200 ? [200, 422] : [201, 422],
      );
    }
  });

  it('concurrent changes of one customer are each applied on what the other wrote (none is lost)', async () => {
    const customer = await create();
    const fields = [
      { name: 'N' },
      { locale: 'fr' },
      { metadata: { m: 1 } },
      { billing_address: { country: 'IT' } },
    ];
    const replies = await Promise.all(fields.map((body) => patch(customer.id, body)));
    // A change that keeps losing may ask for a retry; no other answer is acceptable.
    for (const reply of replies) expect([200, 409]).toContain(reply.status);
    expect(replies.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(2);
    const after = (await get(customer.id)).body;
    for (const [i, body] of fields.entries()) {
      if (replies[i]?.status === 200) expect(after).toMatchObject(body);
    }
    expect((await entriesOf(customer.id)).name).toHaveLength(1);
  });
});

describe('PATCH /v1/customers/external/{external_id}', () => {
  it('changes the customer the external id names (5 round trips: token, its guard, the customer, its organization’s guard marker for the new e-mail, the write); an external_id in its body is ignored', async () => {
    const externalId = `ext-${randomUUID()}`;
    const customer = await create({ external_id: externalId });
    world.resetCount();
    const reply = documented(
      'updateCustomerExternal',
      await patchExternal(externalId, { name: 'By external', external_id: 'ignored', email: unique('ext') }),
    );
    expect(world.roundTrips()).toBe(5);
    expect(reply.body).toMatchObject({ id: customer.id, name: 'By external', external_id: externalId });
    expect(reply.body).toEqual((await get(customer.id)).body);
  });

  it('an unknown, another organization’s, another case’s and an empty external id are the 404', async () => {
    const unknown = documented(
      'updateCustomerExternal',
      await patchExternal(`no-${randomUUID()}`, { name: 'x' }),
    );
    expect(unknown.status).toBe(404);
    expect((await patchExternal(world.demo.customer_external_id.toUpperCase(), { name: 'x' })).body).toEqual(
      unknown.body,
    );
    const theirs = `theirs-${randomUUID()}`;
    await create({ external_id: theirs }, world.demo.other_organization.personal_access_token);
    expect((await patchExternal(theirs, { name: 'x' })).body).toEqual(unknown.body);
    for (const path of ['/v1/customers/external/', '/v1/customers/external']) {
      expect((await world.call('PATCH', path, { token: pat(), body: { name: 'x' } })).body, path).toEqual(
        unknown.body,
      );
    }
  });
});

describe('DELETE /v1/customers/{id}', () => {
  it('204 in 3 round trips: gone from reads and the list, its address and external id free at once', async () => {
    const externalId = `del-${randomUUID()}`;
    const customer = await create({ external_id: externalId, name: 'Doomed' });
    const total = await listTotal();
    world.resetCount();
    const reply = documented('deleteCustomer', await remove(customer.id));
    expect(world.roundTrips()).toBe(3);
    expect(reply.status).toBe(204);
    expect(reply.raw ?? '').toBe('');
    expect((await get(customer.id)).status).toBe(404);
    expect(await listTotal()).toBe(total - 1);
    for (const found of Object.values(await entriesOf(customer.id))) expect(found).toEqual([]);
    expect(await stored(keys.customerEmail(world.demo.organization_id, customer.email))).toBeUndefined();
    expect(await stored(keys.customerExternalId(world.demo.organization_id, externalId))).toBeUndefined();
    // A soft delete: the item stays, marked, its external id cleared (it may name someone else now).
    const item = await getCustomer(world.table, customer.id, true);
    expect(item).toMatchObject({ deleted_at: expect.any(String), external_id: null, name: 'Doomed' });
    const again = await create({ email: customer.email, external_id: externalId });
    expect(again.id).not.toBe(customer.id);
    // A second delete is the 404 of an unknown id.
    const second = documented('deleteCustomer', await remove(customer.id));
    expect(second.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
  });

  it('anonymize=true leaves nothing personal: an address made of its id, no name, billing details or metadata', async () => {
    const customer = await create({ name: 'Grace Hopper', metadata: { ssn: 'x' } });
    await patch(customer.id, { billing_address: { country: 'US', line1: '1 Main St' }, locale: 'en' });
    // A subscription shows its customer as it is now.
    const subscription = await world.call('POST', '/v1/subscriptions/', {
      token: pat(),
      body: { product_id: world.demo.free_product_id, customer_id: customer.id },
    });
    expect((await remove(customer.id, '?anonymize=true')).status).toBe(204);
    const item = await getCustomer(world.table, customer.id, true);
    expect(item).toMatchObject({
      email: `${customer.id}@anonymized.invalid`,
      email_verified: false,
      name: null,
      billing_name: null,
      billing_address: null,
      tax_id: null,
      locale: null,
      metadata: {},
      external_id: null,
    });
    const embedded = await world.call('GET', `/v1/subscriptions/${subscription.body.id}`, { token: pat() });
    expect(embedded.body.customer).toMatchObject({
      id: customer.id,
      email: `${customer.id}@anonymized.invalid`,
      name: null,
      deleted_at: item?.deleted_at,
    });
    expect(JSON.stringify(embedded.body)).not.toContain('Grace');
    expect(JSON.stringify(embedded.body)).not.toContain(customer.email);
  });

  it('anonymize=false keeps the record as it was; anything but true or false is a 422', async () => {
    const customer = await create({ name: 'Kept' });
    expect((await remove(customer.id, '?anonymize=false')).status).toBe(204);
    expect(await getCustomer(world.table, customer.id, true)).toMatchObject({
      name: 'Kept',
      email: customer.email,
    });
    const other = await create();
    const bad = documented('deleteCustomer', await remove(other.id, '?anonymize=yes'));
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'anonymize']);
    expect((await get(other.id)).status).toBe(200);
  });

  it('of concurrent deletes exactly one is a 204; the count drops once', async () => {
    const customer = await create();
    const total = await listTotal();
    const replies = await Promise.all(Array.from({ length: 6 }, () => remove(customer.id)));
    expect(replies.filter((r) => r.status === 204)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 404)).toHaveLength(5);
    expect(await listTotal()).toBe(total - 1);
  });

  it('a delete racing a change of the same customer: the delete wins or follows, never leaves entries behind', async () => {
    for (let round = 0; round < 4; round++) {
      const customer = await create();
      const [changed, deleted] = await Promise.all([
        patch(customer.id, { name: `R${round}` }),
        remove(customer.id),
      ]);
      expect(deleted.status).toBe(204);
      expect([200, 404]).toContain(changed.status);
      for (const found of Object.values(await entriesOf(customer.id))) expect(found).toEqual([]);
    }
  });

  it('another organization’s and an unknown customer are the same 404, and are not deleted', async () => {
    const unknown = await remove(randomUUID());
    expect(unknown.status).toBe(404);
    expect((await remove(world.demo.other_organization.customer_id)).body).toEqual(unknown.body);
    expect(
      (await getCustomer(world.table, world.demo.other_organization.customer_id))?.deleted_at,
    ).toBeNull();
    expect((await remove(randomUUID(), '', world.demo.personal_access_token_without_scopes)).status).toBe(
      403,
    );
  });
});

describe('DELETE /v1/customers/external/{external_id}', () => {
  it('deletes the customer the external id names (4 round trips: token, its range, the customer, the write); then it is unknown', async () => {
    const externalId = `gone ${randomUUID()}/x`;
    const customer = await create({ external_id: externalId });
    world.resetCount();
    const reply = documented('deleteCustomerExternal', await removeExternal(externalId, '?anonymize=true'));
    expect(world.roundTrips()).toBe(4);
    expect(reply.status).toBe(204);
    expect((await get(customer.id)).status).toBe(404);
    expect((await getCustomer(world.table, customer.id, true))?.email).toBe(
      `${customer.id}@anonymized.invalid`,
    );
    expect((await removeExternal(externalId)).status).toBe(404);
    for (const path of ['/v1/customers/external/', '/v1/customers/external']) {
      expect((await world.call('DELETE', path, { token: pat() })).body, path).toEqual({
        error: 'ResourceNotFound',
        detail: 'Not found',
      });
    }
  });
});

describe('a deleted customer', () => {
  let customer: { id: string; email: string };
  let externalId: string;
  let session: string;
  let subscriptionId: string;
  beforeAll(async () => {
    externalId = `deleted-${randomUUID()}`;
    customer = await create({ external_id: externalId });
    const record = await getCustomer(world.table, customer.id, true);
    if (!record) throw new Error('customer not written');
    await createWallet(world.admin, { customer: record, currency: 'usd', type: 'usage', balance: 5 });
    session = (await createCustomerSession(world.admin, { customer: record })).token;
    const subscription = await world.call('POST', '/v1/subscriptions/', {
      token: pat(),
      body: { product_id: world.demo.free_product_id, customer_id: customer.id },
    });
    subscriptionId = subscription.body.id;
    // While live, its session works.
    expect(
      (await world.call('GET', '/v1/customer-portal/wallets/', { token: session })).body.pagination
        .total_count,
    ).toBe(1);
    expect((await remove(customer.id)).status).toBe(204);
  });

  it('gets no new subscription: 422 “Customer does not exist.”', async () => {
    const reply = await world.call('POST', '/v1/subscriptions/', {
      token: pat(),
      body: { product_id: world.demo.free_product_id, customer_id: customer.id },
    });
    expect(reply.status).toBe(422);
    expect(reply.body.detail[0]).toMatchObject({
      loc: ['body', 'customer_id'],
      msg: 'Customer does not exist.',
    });
  });

  it('gets no new session, by id or by the external id it had', async () => {
    for (const body of [{ customer_id: customer.id }, { external_customer_id: externalId }]) {
      const reply = await world.call('POST', '/v1/customer-sessions/', { token: pat(), body });
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.detail[0].msg).toBe('Customer does not exist.');
    }
  });

  it('its live session stops working at once, on every customer-portal operation (401 invalid_token)', async () => {
    const wallets = await world.call('GET', '/v1/customer-portal/wallets/', { token: session });
    expect(wallets.status).toBe(401);
    const portal = operations.filter((operation) => operation.path.startsWith('/v1/customer-portal/'));
    expect(portal.length).toBeGreaterThanOrEqual(2);
    // A well-formed body for those that take one: the session is judged, not the request's shape.
    const bodies: Partial<Record<OperationName, unknown>> = {
      'update-customer-subscription': { cancel_at_period_end: true },
    };
    for (const operation of portal) {
      const body = bodies[operation.name];
      const reply = await world.call(operation.method, operation.path.replace('{id}', randomUUID()), {
        token: session,
        ...(body === undefined ? {} : { body }),
      });
      expect(reply.status, operation.name).toBe(401);
      expect(reply.body.error, operation.name).toBe('invalid_token');
    }
  });

  it('keeps its subscriptions as they were: readable with the customer’s deleted_at, and still revocable', async () => {
    const read = await world.call('GET', `/v1/subscriptions/${subscriptionId}`, { token: pat() });
    expect(read.body.status).toBe('active');
    expect(read.body.customer.deleted_at).toEqual(expect.any(String));
    const revoked = await world.call('DELETE', `/v1/subscriptions/${subscriptionId}`, { token: pat() });
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('canceled');
  });
});
