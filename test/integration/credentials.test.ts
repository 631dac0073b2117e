/**
 * The contract's Errors and Credentials tables, for every operation: which
 * credential is accepted, what each wrong one gets, and that authentication
 * comes before any other check.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalAccessToken, PAT_DEFAULT_TTL_DAYS } from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { findToken } from '#shared/data/tokens.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('credentials');
});
afterAll(() => world?.drop());

interface Op {
  name: string;
  method: string;
  url: () => string;
  body?: () => unknown;
  kind: 'pat' | 'session';
  scope?: string;
}
const ops: Op[] = [
  {
    name: 'create client',
    method: 'POST',
    url: () => '/v1/oauth2/register',
    kind: 'pat',
    body: () => ({ redirect_uris: ['https://a.example'], client_name: 'x' }),
  },
  {
    name: 'create subscription',
    method: 'POST',
    url: () => '/v1/subscriptions/',
    kind: 'pat',
    scope: 'subscriptions:write',
    body: () => ({ product_id: world.demo.free_product_id, customer_id: world.demo.customer_id }),
  },
  {
    name: 'list wallets',
    method: 'GET',
    url: () => '/v1/customer-portal/wallets/',
    kind: 'session',
    scope: 'customer_portal:read',
  },
  {
    name: 'delete webhook endpoint',
    method: 'DELETE',
    url: () => `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[2]}`,
    kind: 'pat',
    scope: 'webhooks:write',
  },
];

const send = (op: Op, authorization: string | undefined, body: unknown = op.body?.()) =>
  world.call(op.method, op.url(), {
    ...(authorization !== undefined ? { headers: { authorization } } : {}),
    body,
  });

const unauthorized = { error: 'Unauthorized', detail: 'Unauthorized' };

describe.each(ops)('$name: credentials', (op) => {
  const right = () =>
    op.kind === 'pat' ? world.demo.personal_access_token : world.demo.customer_session_token;
  const wrongKind = () =>
    op.kind === 'pat' ? world.demo.customer_session_token : world.demo.personal_access_token;

  it.each([
    ['no header', undefined],
    ['Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['empty bearer', 'Bearer '],
  ])('%s → 401 Unauthorized with WWW-Authenticate', async (_, header) => {
    const reply = await send(op, header);
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual(unauthorized);
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="polar"');
    expect(reply.headers['content-type']).toBe('application/json');
  });

  it('a credential of the wrong kind → 401 Unauthorized', async () => {
    const reply = await send(op, `Bearer ${wrongKind()}`);
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual(unauthorized);
  });

  it.each([
    ['garbage', 'Bearer undefined'],
    ['a token with a line break', 'Bearer polar_x\nyz'],
    ['a token with a line separator', 'Bearer polar_x\u2028yz'],
    [
      'unknown token of the right shape',
      `Bearer ${op.kind === 'pat' ? 'polar_pat_' : 'polar_cst_'}${'A'.repeat(48)}`,
    ],
  ])('%s → 401 invalid_token', async (_, header) => {
    const reply = await send(op, header);
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="polar", error="invalid_token"');
  });

  it('authentication comes before validation: an invalid body with no credential is 401, not 422', async () => {
    const reply = await send(op, undefined, op.method === 'POST' ? { nonsense: true } : undefined);
    expect(reply.status).toBe(401);
  });

  it('the right credential is accepted', async () => {
    const reply = await send(op, `Bearer ${right()}`);
    expect(reply.status).toBeLessThan(300);
  });

  if (op.scope) {
    it(`a valid credential without ${op.scope} → 403 insufficient_scope`, async () => {
      let token = world.demo.personal_access_token_without_scopes;
      if (op.kind === 'session') {
        // Sessions always carry the portal scopes; strip them to exercise the check.
        const { createCustomerSession } = await import('#scripts/admin/commands.ts');
        const { getCustomer } = await import('#shared/data/catalog.ts');
        const customer = await getCustomer(world.table, world.demo.customer_id);
        if (!customer) throw new Error('demo customer missing');
        const session = await createCustomerSession(world.admin, { customer });
        await world.table.doc.send(
          new UpdateCommand({
            TableName: world.table.name,
            Key: keys.token(hashSecret(session.token)),
            UpdateExpression: 'SET #s = :s',
            ExpressionAttributeNames: { '#s': 'scope' },
            ExpressionAttributeValues: { ':s': 'openid' },
          }),
        );
        token = session.token;
      }
      const reply = await send(op, `Bearer ${token}`);
      expect(reply.status).toBe(403);
      expect(reply.body).toEqual({ error: 'insufficient_scope', error_description: expect.any(String) });
      expect(reply.headers['www-authenticate']).toContain('error="insufficient_scope"');
      expect(reply.headers['www-authenticate']).toContain(op.scope);
    });
  }
});

describe('expired and revoked credentials', () => {
  it('an expired customer session → 401 invalid_token', async () => {
    const reply = await world.call('GET', '/v1/customer-portal/wallets/', {
      token: world.demo.expired_customer_session_token,
    });
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
  });

  it('an expired personal access token → 401 invalid_token', async () => {
    const stored = await findToken(world.table, hashSecret(world.demo.personal_access_token));
    if (stored?.kind !== 'personal_access_token') throw new Error('demo PAT missing');
    // Created by an operator whose clock said a day past the default lifetime ago.
    const past = new Date(Date.now() - (PAT_DEFAULT_TTL_DAYS + 1) * 86_400_000);
    const expired = await createPersonalAccessToken(
      { ...world.admin, now: () => past },
      { userId: stored.user_id, scope: 'webhooks:write' },
    );
    const reply = await world.call('DELETE', `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[0]}`, {
      token: expired.token,
    });
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
  });

  it('a revoked personal access token → 401 invalid_token', async () => {
    const stored = await findToken(world.table, hashSecret(world.demo.personal_access_token));
    if (stored?.kind !== 'personal_access_token') throw new Error('demo PAT missing');
    const revoked = await createPersonalAccessToken(world.admin, {
      userId: stored.user_id,
      scope: 'webhooks:write',
    });
    await world.table.doc.send(
      new UpdateCommand({
        TableName: world.table.name,
        Key: keys.token(hashSecret(revoked.token)),
        UpdateExpression: 'SET revoked_at = :t',
        ExpressionAttributeValues: { ':t': new Date().toISOString() },
      }),
    );
    const reply = await world.call('DELETE', `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[0]}`, {
      token: revoked.token,
    });
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
  });
});

describe('wire conventions on POST', () => {
  const post = (headers: Record<string, string>, body: string) =>
    world.call('POST', '/v1/oauth2/register', { token: world.demo.personal_access_token, headers, body });
  const good = JSON.stringify({ redirect_uris: ['https://a.example'], client_name: 'x' });

  it('no or another Content-Type → 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const reply = await post({ 'content-type': type }, good);
      expect(reply.status).toBe(415);
      expect(reply.body).toEqual({
        error: 'UnsupportedMediaType',
        detail: 'Content-Type must be application/json',
      });
    }
    const none = await world.call('POST', '/v1/oauth2/register', { token: world.demo.personal_access_token });
    expect(none.status).toBe(415);
  });

  it('accepts application/json with parameters, in any case', async () => {
    expect((await post({ 'content-type': 'Application/JSON; charset=utf-8' }, good)).status).toBe(201);
  });

  it('a body over 1 MiB → 413, before the body is parsed', async () => {
    const reply = await post(
      { 'content-type': 'application/json' },
      `{"client_name":"${'x'.repeat(1024 * 1024)}"`,
    );
    expect(reply.status).toBe(413);
    expect(reply.body.error).toBe('PayloadTooLarge');
  });

  it('invalid JSON → 422 json_invalid; JSON that is not an object → 422', async () => {
    const bad = await post({ 'content-type': 'application/json' }, '{nope');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    for (const body of ['null', '"text"', '42', '[]']) {
      const reply = await post({ 'content-type': 'application/json' }, body);
      expect(reply.status, body).toBe(422);
      expect(reply.body.detail[0].loc).toEqual(['body']);
    }
  });

  it('ignores Content-Type on GET/DELETE and a Polar-Version header', async () => {
    const reply = await world.call('GET', '/v1/customer-portal/wallets/', {
      token: world.demo.customer_session_token,
      headers: { 'content-type': 'application/json', 'polar-version': '2026-10' },
    });
    expect(reply.status).toBe(200);
  });
});
