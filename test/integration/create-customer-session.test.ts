import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createCustomer, createPersonalAccessToken, createUser } from '#scripts/admin/commands.ts';
import { DEMO_CUSTOMER_EXTERNAL_ID } from '#scripts/local/seed.ts';
import { keys } from '#shared/data/table.ts';
import { findToken } from '#shared/data/tokens.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { portalBaseUrl } from '#shared/services/create-customer-session.ts';
import { softDelete } from '../support/table-state.ts';
import { createWorld, WORLD_ISSUER, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('customer-sessions');
});
afterAll(() => world?.drop());

const PATH = '/v1/customer-sessions/';
const open = (
  body: unknown,
  token = world.demo.personal_access_token,
  headers: Record<string, string> = {},
) => world.call('POST', PATH, { token, body, headers });

describe('Create Customer Session', () => {
  it('201: a one-hour session by customer id, whose token lists the wallets of that customer', async () => {
    const before = Date.now();
    const reply = await open({
      customer_id: world.demo.customer_id,
      return_url: 'https://shop.example/account',
    });
    expect(reply.status).toBe(201);
    expect(reply.headers['cache-control']).toBe('no-store');
    const session = reply.body;
    expect(session).toMatchObject({
      customer_id: world.demo.customer_id,
      return_url: 'https://shop.example/account',
      modified_at: null,
      customer: {
        id: world.demo.customer_id,
        email: 'ada@customer.example',
        external_id: DEMO_CUSTOMER_EXTERNAL_ID,
      },
    });
    expect(session.token).toMatch(/^polar_cst_/);
    const lifetime = Date.parse(session.expires_at) - Date.parse(session.created_at);
    expect(lifetime).toBe(3_600_000);
    expect(Date.parse(session.created_at)).toBeGreaterThanOrEqual(before - 1000);

    // Only the hash is stored, and the token works at once for the portal.
    const stored = await findToken(world.table, hashSecret(session.token));
    expect(stored).toMatchObject({ kind: 'customer_session', customer_id: world.demo.customer_id });
    expect(JSON.stringify(stored)).not.toContain(session.token);
    const wallets = await world.call('GET', '/v1/customer-portal/wallets/', { token: session.token });
    expect(wallets.status).toBe(200);
    expect(wallets.body.pagination.total_count).toBe(14);
  });

  it("the portal URL carries the token in its fragment (no query, no e-mail) under the organization's slug, on the API's own origin by default", async () => {
    // The API's own origin is the configured issuer, whatever Host the request names.
    const reply = await open({ customer_id: world.demo.customer_id }, undefined, { host: 'api.example.com' });
    const url = new URL(reply.body.customer_portal_url);
    expect(url.origin).toBe(WORLD_ISSUER);
    expect(url.pathname).toMatch(/^\/[a-z0-9-]+\/portal$/);
    // A fragment never reaches a server: not the portal's access log, not a Referer.
    expect(url.search).toBe('');
    expect(new URLSearchParams(url.hash.slice(1)).get('customer_session_token')).toBe(reply.body.token);
    expect(reply.body.customer_portal_url).not.toContain('customer.example');
    expect(reply.body.return_url).toBeNull();
    expect(portalBaseUrl('http://127.0.0.1:3000', undefined)).toBe('http://127.0.0.1:3000');
    expect(portalBaseUrl('https://api.example.com', 'https://portal.example.com')).toBe(
      'https://portal.example.com',
    );
  });

  it.each(['external_customer_id', 'customer_external_id'])('201 by the external id (%s)', async (field) => {
    const reply = await open({ [field]: DEMO_CUSTOMER_EXTERNAL_ID });
    expect(reply.status).toBe(201);
    expect(reply.body.customer_id).toBe(world.demo.customer_id);
  });

  it('422 for an unknown, foreign or deleted customer, alike', async () => {
    const gone = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: 'gone-session@x.example',
    });
    await softDelete(world.table, keys.customer(gone.id));
    for (const id of [
      '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b',
      world.demo.other_organization.customer_id,
      gone.id,
    ]) {
      const reply = await open({ customer_id: id });
      expect(reply.status, id).toBe(422);
      expect(reply.body).toEqual({
        error: 'PolarRequestValidationError',
        detail: [
          { loc: ['body', 'customer_id'], msg: 'Customer does not exist.', type: 'value_error', input: id },
        ],
      });
    }
    const unknownExternal = await open({ external_customer_id: 'nobody-here' });
    expect(unknownExternal.status).toBe(422);
    expect(unknownExternal.body.detail[0].loc).toEqual(['body', 'external_customer_id']);
  });

  it("409 AmbiguousExternalCustomerID when the external id names customers in two of the caller's organizations", async () => {
    const user = await createUser(world.admin, { email: `both+${randomUUID()}@x.example` });
    await addMember(world.admin, world.demo.organization_id, user.id);
    await addMember(world.admin, world.demo.other_organization.organization_id, user.id);
    const { token } = await createPersonalAccessToken(world.admin, {
      userId: user.id,
      scope: 'customer_sessions:write',
    });
    const shared = `shared-${randomUUID()}`;
    for (const organizationId of [
      world.demo.organization_id,
      world.demo.other_organization.organization_id,
    ]) {
      await createCustomer(world.admin, { organizationId, email: `${shared}@x.example`, externalId: shared });
    }
    const reply = await open({ external_customer_id: shared }, token);
    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('AmbiguousExternalCustomerID');
    // By id, each of them is unambiguous.
    expect((await open({ customer_id: world.demo.customer_id }, token)).status).toBe(201);
  });

  it('422 at the body when no customer is named, or an id or URL is malformed', async () => {
    for (const body of [
      {},
      { customer_id: 'not-a-uuid' },
      { external_customer_id: '' },
      { customer_id: world.demo.customer_id, return_url: 'javascript:alert(1)' },
      { customer_id: world.demo.customer_id, return_url: 'https://' },
    ]) {
      const reply = await open(body);
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.error).toBe('RequestValidationError');
    }
  });

  it('401 without a token, 403 without the customer_sessions:write scope', async () => {
    expect((await world.call('POST', PATH, { body: { customer_id: world.demo.customer_id } })).status).toBe(
      401,
    );
    const reply = await open(
      { customer_id: world.demo.customer_id },
      world.demo.personal_access_token_without_scopes,
    );
    expect(reply.status).toBe(403);
    expect(reply.body.error).toBe('insufficient_scope');
  });

  it('a session of a customer deleted later stops working at once', async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: 'leaving@x.example',
    });
    const { token } = (await open({ customer_id: customer.id })).body;
    expect((await world.call('GET', '/v1/customer-portal/wallets/', { token })).status).toBe(200);
    await softDelete(world.table, keys.customer(customer.id));
    expect((await world.call('GET', '/v1/customer-portal/wallets/', { token })).status).toBe(401);
  });

  it('costs three round trips by id: token, one batch read, one transaction', async () => {
    world.resetCount();
    expect((await open({ customer_id: world.demo.customer_id })).status).toBe(201);
    expect(world.roundTrips()).toBe(3);
    world.resetCount();
    expect((await open({ external_customer_id: DEMO_CUSTOMER_EXTERNAL_ID })).status).toBe(201);
    expect(world.roundTrips()).toBe(4);
  });
});
