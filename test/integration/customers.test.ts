/**
 * Create Customer and Get Customer against DynamoDB Local under the functions' deployed policies:
 * uniqueness of e-mail and external id enforced by the database (races included), tenant safety,
 * round trips.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/data/table.ts';
import { expectDocumented } from '../support/contract.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('customers');
});
afterAll(() => world?.drop());

const create = (body: unknown, token = world.demo.personal_access_token, headers?: Record<string, string>) =>
  world.call('POST', '/v1/customers/', { token, body, ...(headers ? { headers } : {}) });
const get = (id: string, token = world.demo.personal_access_token) =>
  world.call('GET', `/v1/customers/${id}`, { token });
const unique = (label: string) => `${label}+${randomUUID().slice(0, 8)}@example.com`;

function documented(operationId: string, reply: Reply): Reply {
  expectDocumented(operationId, {
    status: reply.status,
    headers: new Headers(reply.headers),
    body: reply.body,
    text: reply.raw ?? '',
  });
  return reply;
}

describe('POST /v1/customers/', () => {
  it('creates an individual customer (201) in 2 round trips; Get Customer reads it back in 2', async () => {
    const email = unique('Ada');
    world.resetCount();
    const reply = documented(
      'createCustomer',
      await create({
        email,
        name: 'Ada Lovelace',
        external_id: `crm-${randomUUID()}`,
        metadata: { tier: 'gold', seats: 3 },
      }),
    );
    expect(world.roundTrips()).toBe(2);
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      email,
      name: 'Ada Lovelace',
      type: 'individual',
      email_verified: false,
      organization_id: world.demo.organization_id,
      metadata: { tier: 'gold', seats: 3 },
      deleted_at: null,
      modified_at: null,
    });
    world.resetCount();
    const read = documented('getCustomer', await get(reply.body.id));
    expect(world.roundTrips()).toBe(2);
    expect(read.body).toEqual(reply.body);
  });

  it('an e-mail is unique per organization, case-insensitively: 422 at body.email, nothing written', async () => {
    const email = unique('Grace');
    expect((await create({ email })).status).toBe(201);
    const again = documented('createCustomer', await create({ email: email.toUpperCase() }));
    expect(again.status).toBe(422);
    expect(again.body).toEqual({
      error: 'PolarRequestValidationError',
      detail: [
        {
          loc: ['body', 'email'],
          msg: 'A customer with this email address already exists.',
          type: 'value_error',
          input: email.toUpperCase(),
        },
      ],
    });
    // Another organization may use the same address.
    const other = await create({ email }, world.demo.other_organization.personal_access_token);
    expect(other.status).toBe(201);
  });

  it('an external id is unique per organization: 422 at body.external_id', async () => {
    const externalId = `crm-${randomUUID()}`;
    expect((await create({ email: unique('a'), external_id: externalId })).status).toBe(201);
    const again = await create({ email: unique('b'), external_id: externalId });
    expect(again.status).toBe(422);
    expect(again.body.detail[0]).toMatchObject({
      loc: ['body', 'external_id'],
      msg: 'A customer with this external ID already exists.',
    });
    // Its customer was not written either: the e-mail is still free.
    const stored = await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: keys.customerEmail(world.demo.organization_id, again.body.detail[0].input),
      }),
    );
    expect(stored.Item).toBeUndefined();
  });

  it('metadata numbers DynamoDB cannot hold come back as sent (found by the fuzzer: was a 500)', async () => {
    const metadata = { tiny: 2e-323, huge: 1e300, exact: 9007199254740991, text: 'ok' };
    const reply = await create({ email: unique('numbers'), metadata });
    expect(reply.status).toBe(201);
    expect(reply.body.metadata).toEqual(metadata);
    expect((await get(reply.body.id)).body.metadata).toEqual(metadata);
  });

  it('of concurrent creates with one e-mail exactly one is a 201', async () => {
    const email = unique('race');
    const replies = await Promise.all(Array.from({ length: 8 }, () => create({ email, name: 'racer' })));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 422)).toHaveLength(7);
  });

  it('the same Idempotency-Key replays the first answer', async () => {
    const key = `customers-${randomUUID()}`;
    const body = { email: unique('idem') };
    const first = await create(body, undefined, { 'idempotency-key': key });
    const second = await create(body, undefined, { 'idempotency-key': key });
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
  });

  it('refuses what does not qualify with the contract’s 422, and needs customers:write', async () => {
    for (const body of [
      {},
      { email: 'not-an-address' },
      { email: 'a b@example.com' },
      { email: unique('team'), type: 'team' },
      { email: unique('ctl'), name: 'bell\u0007' },
      { email: unique('ext'), external_id: '' },
      { email: unique('ext'), external_id: 'tab\there' },
      { email: unique('meta'), metadata: { k: null } },
    ]) {
      const reply = documented('createCustomer', await create(body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
    }
    const foreign = await create({
      email: unique('org'),
      organization_id: world.demo.other_organization.organization_id,
    });
    expect(foreign.status).toBe(422);
    expect(foreign.body.detail[0]).toMatchObject({
      loc: ['body', 'organization_id'],
      msg: 'Organization does not exist.',
    });
    const scopeless = await create(
      { email: unique('scope') },
      world.demo.personal_access_token_without_scopes,
    );
    expect(scopeless.status).toBe(403);
  });
});

describe('GET /v1/customers/{id}', () => {
  it('another organization’s customer, a deleted one and an unknown id are the same 404', async () => {
    const unknown = await get(randomUUID());
    expect(unknown.status).toBe(404);
    const foreign = await get(world.demo.other_organization.customer_id);
    expect(foreign.body).toEqual(unknown.body);
    expect((await get(world.demo.customer_id)).body.id).toBe(world.demo.customer_id);
    expect((await get(world.demo.customer_id.toUpperCase())).status).toBe(200);
    expect((await get('not-a-uuid')).status).toBe(422);
  });
});
