/**
 * The local API over real HTTP, started exactly as `npm start` starts it:
 * DynamoDB Local, the stack's table, the demo seed, the real handlers behind the
 * API Gateway v2 adapter. Every answer is checked against the OpenAPI document.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '#shared/operations.ts';
import { expectDocumented, fetchJson } from '../support/contract.ts';
import { sharedLocalApi } from '../support/local-api.ts';

let stack: ReturnType<typeof sharedLocalApi>;
let base: string;
beforeAll(async () => {
  stack = sharedLocalApi();
  base = stack.demo.base_url;
});
afterAll(() => stack?.stop());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = { 'content-type': 'application/json' };

describe('the four operations over HTTP', () => {
  it('POST /v1/subscriptions/ with the demo PAT → 201 Subscription', async () => {
    const reply = await fetchJson(`${base}/v1/subscriptions/`, {
      method: 'POST',
      headers: { ...bearer(stack.demo.personal_access_token), ...json },
      body: JSON.stringify({
        product_id: stack.demo.free_product_id,
        customer_id: stack.demo.customer_id,
        metadata: { via: 'http' },
      }),
    });
    expect(reply.status).toBe(201);
    expectDocumented('createSubscription', reply);
  });

  it('GET /v1/customer-portal/wallets/ with the demo session → 200 page', async () => {
    const reply = await fetchJson(
      `${base}/v1/customer-portal/wallets/?sorting=balance&sorting=-created_at&limit=5&page=2`,
      {
        headers: bearer(stack.demo.customer_session_token),
      },
    );
    expect(reply.status).toBe(200);
    expectDocumented('listWallets', reply);
    expect(reply.body).toMatchObject({ pagination: { total_count: 14, max_page: 3 } });
  });

  it('POST /v1/oauth2/register → 201 registration, no-store', async () => {
    const reply = await fetchJson(`${base}/v1/oauth2/register`, {
      method: 'POST',
      headers: { ...bearer(stack.demo.personal_access_token), ...json },
      body: JSON.stringify({ redirect_uris: ['https://app.example/cb'], client_name: 'e2e' }),
    });
    expect(reply.status).toBe(201);
    expect(reply.headers.get('cache-control')).toBe('no-store');
    expectDocumented('createClient', reply);
  });

  it('DELETE /v1/webhooks/endpoints/{id} → 204, then 404', async () => {
    const url = `${base}/v1/webhooks/endpoints/${stack.demo.webhook_endpoint_ids[0]}`;
    const first = await fetchJson(url, {
      method: 'DELETE',
      headers: bearer(stack.demo.personal_access_token),
    });
    expect(first.status).toBe(204);
    expectDocumented('deleteWebhookEndpoint', first);
    const second = await fetchJson(url, {
      method: 'DELETE',
      headers: bearer(stack.demo.personal_access_token),
    });
    expect(second.status).toBe(404);
    expectDocumented('deleteWebhookEndpoint', second);
  });
});

describe('error answers match the document', () => {
  it.each([
    ['createSubscription', 'POST', '/v1/subscriptions', { product_id: 'x' }],
    ['createClient', 'POST', '/v1/oauth2/register/', { client_name: 1 }],
  ])('%s 422', async (operationId, method, path, body) => {
    const reply = await fetchJson(`${base}${path}`, {
      method,
      headers: { ...bearer(stack.demo.personal_access_token), ...json },
      body: JSON.stringify(body),
    });
    expect(reply.status).toBe(422);
    expectDocumented(operationId, reply);
  });

  it('createSubscription 422 rule violation, 401, 403', async () => {
    const post = (token: string) =>
      fetchJson(`${base}/v1/subscriptions/`, {
        method: 'POST',
        headers: { ...bearer(token), ...json },
        body: JSON.stringify({ product_id: stack.demo.paid_product_id, customer_id: stack.demo.customer_id }),
      });
    const rule = await post(stack.demo.personal_access_token);
    expect(rule.status).toBe(422);
    expect((rule.body as { error: string }).error).toBe('PolarRequestValidationError');
    expectDocumented('createSubscription', rule);
    const forbidden = await post(stack.demo.personal_access_token_without_scopes);
    expect(forbidden.status).toBe(403);
    expectDocumented('createSubscription', forbidden);
    const invalid = await post('polar_pat_nonexistentnonexistentnonexistent00');
    expect(invalid.status).toBe(401);
    expectDocumented('createSubscription', invalid);
  });

  it('listWallets 401 (expired session) and 422 (bad query)', async () => {
    const expired = await fetchJson(`${base}/v1/customer-portal/wallets`, {
      headers: bearer(stack.demo.expired_customer_session_token),
    });
    expect(expired.status).toBe(401);
    expectDocumented('listWallets', expired);
    const bad = await fetchJson(`${base}/v1/customer-portal/wallets?limit=0`, {
      headers: bearer(stack.demo.customer_session_token),
    });
    expect(bad.status).toBe(422);
    expectDocumented('listWallets', bad);
  });

  it("another tenant's webhook endpoint is 404, like an unknown one", async () => {
    const reply = await fetchJson(
      `${base}/v1/webhooks/endpoints/${stack.demo.other_organization.webhook_endpoint_id}`,
      {
        method: 'DELETE',
        headers: bearer(stack.demo.personal_access_token),
      },
    );
    expect(reply.status).toBe(404);
    expect(reply.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
  });
});

describe('routing, over the routes the stack declares', () => {
  // A path of each operation as a client calls it: `{id}` filled with a well-formed id.
  const concrete = (path: string) => path.replace(/\{\w+\}/g, '5a1c0e8e-8f0a-4c56-9d0b-7b1c2d3e4f50');
  const spellings = operations.flatMap((operation) => {
    const path = concrete(operation.path).replace(/\/$/, '');
    return [
      [operation.method, path],
      [operation.method, `${path}/`],
    ] as const;
  });

  it.each(spellings)('%s %s reaches its function (its own 401), without a redirect', async (method, path) => {
    // Declared a form, so that the endpoints a client authenticates at in the form reach that step.
    const reply = await fetch(`${base}${path}`, {
      method,
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toMatch(/^(Bearer|Basic) realm="polar"/);
  });

  it.each(operations.map((operation) => [operation.method, concrete(operation.path).replace(/\/$/, '')]))(
    // Two segments: one could be another operation's `{id}` (`/wallets/extra` is Get Wallet's).
    '%s %s/extra/more: a greedy twin refuses real extra segments with 404, before asking for credentials',
    async (method, path) => {
      const reply = await fetchJson(`${base}${path}/extra/more`, { method });
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({ error: 'NotFound', detail: 'Not Found' });
    },
  );

  it('unknown route → 404 NotFound JSON; known route, wrong method → 405 with Allow', async () => {
    const unknown = await fetchJson(`${base}/v1/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'NotFound', detail: 'Not Found' });
    expect(unknown.headers.get('content-type')).toMatch(/^application\/json/);
    const wrong = await fetchJson(`${base}/v1/subscriptions/`, { method: 'PUT' });
    expect(wrong.status).toBe(405);
    expect(wrong.body).toEqual({ error: 'MethodNotAllowed', detail: 'Method Not Allowed' });
    expect(wrong.headers.get('allow')).toBe('GET, POST');
  });
});

describe('headers every answer carries (docs/api.md)', () => {
  it('nosniff, no-referrer, a CSP and no-store unless the function caches: successes, errors, 404 and 405 alike', async () => {
    const { demo } = stack;
    const answers = {
      'a 200': await fetchJson(`${base}/v1/products/${demo.free_product_id}`, {
        headers: bearer(demo.personal_access_token),
      }),
      'a 401': await fetchJson(`${base}/v1/products/`),
      'a 422': await fetchJson(`${base}/v1/products/?limit=zero`, {
        headers: bearer(demo.personal_access_token),
      }),
      'an unknown route (404)': await fetchJson(`${base}/v1/nope`),
      'a wrong method (405)': await fetchJson(`${base}/v1/subscriptions/`, { method: 'PUT' }),
      'a greedy twin (404)': await fetchJson(`${base}/v1/products/a/b/c`),
      'the OpenAPI document': await fetchJson(`${base}/openapi.json`),
      'discovery (cacheable)': await fetchJson(`${base}/.well-known/oauth-authorization-server`),
    };
    for (const [label, reply] of Object.entries(answers)) {
      expect(reply.headers.get('x-content-type-options'), label).toBe('nosniff');
      expect(reply.headers.get('referrer-policy'), label).toBe('no-referrer');
      expect(reply.headers.get('content-security-policy'), label).toMatch(/frame-ancestors 'none'/);
      // The function's own caching stands (discovery, the document); everything else is not stored.
      const caching = { 'discovery (cacheable)': /max-age/, 'the OpenAPI document': /^no-cache$/ }[label];
      expect(reply.headers.get('cache-control'), label).toMatch(caching ?? /^no-store$/);
    }
    expect(answers['a 401'].status).toBe(401);
    expect(answers['a 422'].status).toBe(422);
  });
});

describe('demo data (docs/local.md)', () => {
  it('has every key the local-run contract lists', () => {
    const demo = stack.demo as unknown as Record<string, unknown>;
    for (const key of [
      'base_url',
      'organization_id',
      'personal_access_token',
      'personal_access_token_without_scopes',
      'customer_id',
      'customer_session_token',
      'expired_customer_session_token',
      'second_customer_id',
      'second_customer_session_token',
      'large_customer_id',
      'large_customer_session_token',
      'free_product_id',
      'paid_product_id',
      'one_time_product_id',
      'archived_product_id',
      'webhook_endpoint_ids',
      'other_organization',
    ]) {
      expect(demo, key).toHaveProperty(key);
    }
    expect(stack.demo.webhook_endpoint_ids).toHaveLength(3);
    expect(Object.keys(stack.demo.other_organization).sort()).toEqual([
      'customer_id',
      'free_product_id',
      'organization_id',
      'personal_access_token',
      'webhook_endpoint_id',
    ]);
  });

  it('docs/local.md describes every key of .local/demo.json, and no key that is not there', () => {
    const table = readFileSync('docs/local.md', 'utf8').split('## `.local/demo.json`')[1] ?? '';
    const documented = [...table.matchAll(/^\| ([^|]+) \|/gm)]
      .flatMap((row) => [...(row[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((key) => key[1]))
      .filter((key) => key !== undefined);
    expect(documented.sort()).toEqual(Object.keys(stack.demo).sort());
  });

  it('the demo customer has ≥ 12 wallets in several currencies, both types, a shared and a negative balance', async () => {
    const reply = await fetchJson(`${base}/v1/customer-portal/wallets/?limit=100`, {
      headers: bearer(stack.demo.customer_session_token),
    });
    const items = (reply.body as { items: { balance: number; currency: string; created_at: string }[] })
      .items;
    expect(items.length).toBeGreaterThanOrEqual(12);
    expect(new Set(items.map((w) => w.currency)).size).toBeGreaterThan(3);
    expect(new Set(items.map((w) => w.created_at)).size).toBe(items.length);
    const balances = items.map((w) => w.balance);
    expect(new Set(balances).size).toBeLessThan(balances.length);
    expect(balances.some((b) => b < 0)).toBe(true);
  });

  it('the large customer pages past the 100-item limit', async () => {
    const reply = await fetchJson(`${base}/v1/customer-portal/wallets/?limit=100&page=2`, {
      headers: bearer(stack.demo.large_customer_session_token),
    });
    expect(reply.body).toMatchObject({ pagination: { total_count: 120, max_page: 2 } });
    expect((reply.body as { items: unknown[] }).items).toHaveLength(20);
  });
});
