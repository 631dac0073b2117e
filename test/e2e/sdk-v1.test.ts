/**
 * The official client, 1.x line (`@polar-sh/sdk@1.0.1`, API version 2026-10),
 * against the local API started as `npm start` starts it. This client does not
 * validate bodies; it sends `Content-Type: application/json` on every request
 * (GET and DELETE included), a `Polar-Version` header and `sorting=-created_at`
 * when no sorting is given, and maps statuses to its error classes. Every
 * exchange is recorded at `fetch` so the test sees both what the client sent
 * and what the API answered, and checks each answer against the OpenAPI document.
 */
import { isDeepStrictEqual } from 'node:util';
import { PolarClientError } from '@polar-sh/sdk';
import { createPolar, errors, type models } from '@polar-sh/sdk/2026-10';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WEBHOOK_SECRET_PLACEHOLDER } from '#shared/domain/secrets.ts';
import { expectDocumented, type HttpReply } from '../support/contract.ts';
import { SDK_TIMEOUT_SECONDS, scopedToken, sharedLocalApi } from '../support/local-api.ts';
import { countsSettled } from '../support/subscription-counts.ts';
import { waitFor } from '../support/wait.ts';
import { expectBalanceTies, expectSorted, SORTING_CASES } from '../support/wallet-order.ts';

interface Exchange {
  url: URL;
  method: string;
  sent: Headers;
  reply: HttpReply;
}

let stack: ReturnType<typeof sharedLocalApi>;
let polar: ReturnType<typeof createPolar>;
const exchanges: Exchange[] = [];

beforeAll(async () => {
  stack = sharedLocalApi();
  polar = createPolar({
    baseUrl: stack.demo.base_url,
    accessToken: stack.demo.personal_access_token,
    timeout: SDK_TIMEOUT_SECONDS,
  });
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const response = await realFetch(input, init);
    const text = await response.clone().text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    exchanges.push({
      url: new URL(input instanceof Request ? input.url : String(input)),
      method: init?.method ?? 'GET',
      sent: new Headers(init?.headers),
      reply: { status: response.status, headers: response.headers, body, text },
    });
    return response;
  });
});
afterAll(async () => {
  vi.restoreAllMocks();
  await stack?.stop();
});

function lastExchange(): Exchange {
  const exchange = exchanges.at(-1);
  if (!exchange) throw new Error('no request was recorded');
  return exchange;
}

/** Runs a call that must fail and returns what it threw. */
async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call resolved, a rejection was expected');
}

const asSession = (token: string) => ({ accessToken: token });

describe('Create Client (POST /v1/oauth2/register)', () => {
  it('a confidential client: the client accepts the 201 registration', async () => {
    const registration = (await polar.oauth2.clients.oauth2.createClient({
      client_name: 'sdk-v1 confidential',
      redirect_uris: ['https://app.example/callback'],
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
    })) as Record<string, unknown>;
    const { reply, sent } = lastExchange();
    expect(reply.status).toBe(201);
    expect(sent.get('polar-version')).toBe('2026-10');
    expectDocumented('createClient', reply);
    expect(registration).toEqual(reply.body);
    expect(registration).toMatchObject({
      client_name: 'sdk-v1 confidential',
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      default_sub_type: 'organization',
      client_secret_expires_at: 0,
    });
    expect(registration.client_secret).toMatch(/^polar_cs_/);
  });

  it('a public client: no secret', async () => {
    const registration = (await polar.oauth2.clients.oauth2.createClient({
      client_name: 'sdk-v1 public',
      redirect_uris: ['com.example.app:/callback'],
      token_endpoint_auth_method: 'none',
      scope: 'openid email',
    })) as Record<string, unknown>;
    expectDocumented('createClient', lastExchange().reply);
    expect(registration.client_id).toMatch(/^polar_ci_/);
    expect(registration.scope).toBe('openid email');
    expect(registration).not.toHaveProperty('client_secret');
    expect(registration).not.toHaveProperty('client_secret_expires_at');
  });

  it('422 → errors.HTTPValidationError carrying the parsed body', async () => {
    const error = await failure(() =>
      polar.oauth2.clients.oauth2.createClient({ client_name: 'bad', redirect_uris: [] }),
    );
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
    const validation = error as InstanceType<typeof errors.HTTPValidationError>;
    expect(validation.statusCode).toBe(422);
    expect(validation.error).toMatchObject({
      error: 'RequestValidationError',
      detail: [expect.objectContaining({ loc: ['body', 'redirect_uris'] })],
    });
  });

  it('400 invalid_redirect_uri → PolarClientError with the raw body', async () => {
    const error = await failure(() =>
      polar.oauth2.clients.oauth2.createClient({
        client_name: 'fragment',
        redirect_uris: ['https://app.example/cb#frag'],
      }),
    );
    expect(error).toBeInstanceOf(PolarClientError);
    expect(error).not.toBeInstanceOf(errors.HTTPValidationError);
    const clientError = error as PolarClientError<string>;
    expect(clientError.statusCode).toBe(400);
    expect(JSON.parse(clientError.error)).toMatchObject({ error: 'invalid_redirect_uri' });
  });
});

describe('RFC 7592 through oauth2.clients.oauth2.getClient / updateClient / deleteClient', () => {
  it('a client built with the registration access token reads, replaces and deletes its registration', async () => {
    const registration = (await polar.oauth2.clients.oauth2.createClient({
      client_name: 'sdk-v1 rfc7592',
      redirect_uris: ['https://app.example/callback'],
    })) as { client_id: string; registration_access_token: string };
    const registrant = createPolar({
      baseUrl: stack.demo.base_url,
      accessToken: registration.registration_access_token,
      timeout: SDK_TIMEOUT_SECONDS,
    });
    const read = (await registrant.oauth2.clients.oauth2.getClient(registration.client_id)) as Record<
      string,
      unknown
    >;
    expectDocumented('getClient', lastExchange().reply);
    expect(read).toMatchObject({ client_id: registration.client_id, client_name: 'sdk-v1 rfc7592' });

    const updated = (await registrant.oauth2.clients.oauth2.updateClient(registration.client_id, {
      client_id: registration.client_id,
      client_name: 'sdk-v1 rfc7592, renamed',
      redirect_uris: ['https://app.example/callback'],
    })) as Record<string, unknown>;
    expectDocumented('updateClient', lastExchange().reply);
    expect(updated).toMatchObject({ client_name: 'sdk-v1 rfc7592, renamed' });

    await registrant.oauth2.clients.oauth2.deleteClient(registration.client_id);
    expect(lastExchange().reply.status).toBe(204);
    await expect(registrant.oauth2.clients.oauth2.getClient(registration.client_id)).rejects.toThrow();
    expect(lastExchange().reply.status).toBe(401);
  });
});

describe('Authorize: oauth2.authorize() sends no authorization request', () => {
  it('so the 1.x client gets the RFC 6749 400 for the missing client_id, as a PolarClientError', async () => {
    const error = await failure(() => polar.oauth2.authorize());
    const { reply, url } = lastExchange();
    expect(url.pathname).toBe('/v1/oauth2/authorize');
    expect(url.search).toBe('');
    expectDocumented('authorize', reply);
    expect(error).toBeInstanceOf(PolarClientError);
    expect((error as PolarClientError<string>).statusCode).toBe(400);
    expect(reply.body).toEqual({ error: 'invalid_request', error_description: 'client_id is required.' });
  });
});

describe('Request Token: oauth2.requestToken() sends no form', () => {
  it('so the 1.x client gets the 415 for a JSON request, in RFC 6749 form, as a PolarClientError', async () => {
    const error = await failure(() => polar.oauth2.requestToken());
    const { reply, sent } = lastExchange();
    expect(sent.get('content-type')).toBe('application/json');
    expectDocumented('requestToken', reply);
    expect(error).toBeInstanceOf(PolarClientError);
    expect((error as PolarClientError<string>).statusCode).toBe(415);
    expect(reply.body).toMatchObject({ error: 'invalid_request' });
    expect(reply.headers.get('cache-control')).toBe('no-store');
  });
});

describe('Revoke and Introspect Token: revokeToken() and introspectToken() send no form either', () => {
  it.each([
    ['revokeToken', () => polar.oauth2.revokeToken()],
    ['introspectToken', () => polar.oauth2.introspectToken()],
  ] as const)('%s: the 415, in RFC 6749 form', async (operationId, call) => {
    const error = await failure(call);
    const { reply } = lastExchange();
    expectDocumented(operationId, reply);
    expect((error as PolarClientError<string>).statusCode).toBe(415);
    expect(reply.body).toMatchObject({ error: 'invalid_request' });
  });
});

describe('UserInfo: oauth2.userinfo()', () => {
  it('with the personal access token: the user and, with the email scope, the address', async () => {
    const info = await polar.oauth2.userinfo();
    expectDocumented('userinfo', lastExchange().reply);
    expect(info).toEqual({
      sub: expect.any(String),
      email: expect.stringContaining('@'),
      email_verified: false,
    });
  });
});

describe('Create Subscription (POST /v1/subscriptions/)', () => {
  it('subscribes the demo customer to the free product, with metadata', async () => {
    const subscription = await polar.subscriptions.create({
      product_id: stack.demo.free_product_id,
      customer_id: stack.demo.customer_id,
      metadata: { source: 'sdk-v1', count: 7, enabled: true },
    });
    const { reply, sent } = lastExchange();
    expect(reply.status).toBe(201);
    expect(sent.get('content-type')).toBe('application/json');
    expectDocumented('createSubscription', reply);
    expect(subscription).toMatchObject({
      status: 'active',
      amount: 0,
      product_id: stack.demo.free_product_id,
      customer_id: stack.demo.customer_id,
      metadata: { source: 'sdk-v1', count: 7, enabled: true },
      customer: { id: stack.demo.customer_id },
      product: { id: stack.demo.free_product_id, is_recurring: true },
    });
  });

  it('an archived product → errors.HTTPValidationError with the rule message', async () => {
    const error = (await failure(() =>
      polar.subscriptions.create({
        product_id: stack.demo.archived_product_id,
        customer_id: stack.demo.customer_id,
      }),
    )) as InstanceType<typeof errors.HTTPValidationError>;
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
    expect(error.error).toMatchObject({
      error: 'PolarRequestValidationError',
      detail: [{ loc: ['body', 'product_id'], msg: 'Product is archived.', type: 'value_error' }],
    });
  });

  it("another organization's customer → errors.HTTPValidationError at body.customer_id", async () => {
    const error = (await failure(() =>
      polar.subscriptions.create({
        product_id: stack.demo.free_product_id,
        customer_id: stack.demo.other_organization.customer_id,
      }),
    )) as InstanceType<typeof errors.HTTPValidationError>;
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
    expect(error.error).toMatchObject({
      detail: [{ loc: ['body', 'customer_id'], msg: 'Customer does not exist.' }],
    });
  });

  it('401 (no usable token) and 403 (no scope) → PolarClientError with the status', async () => {
    const body = { product_id: stack.demo.free_product_id, customer_id: stack.demo.customer_id };
    const unauthorized = (await failure(() =>
      polar.subscriptions.create(body, { accessToken: '' }),
    )) as PolarClientError<string>;
    expect(unauthorized).toBeInstanceOf(PolarClientError);
    expect(unauthorized.statusCode).toBe(401);
    expect(JSON.parse(unauthorized.error)).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
    const forbidden = (await failure(() =>
      polar.subscriptions.create(body, { accessToken: stack.demo.personal_access_token_without_scopes }),
    )) as PolarClientError<string>;
    expect(forbidden).toBeInstanceOf(PolarClientError);
    expect(forbidden.statusCode).toBe(403);
    expect(JSON.parse(forbidden.error)).toMatchObject({ error: 'insufficient_scope' });
    expect(lastExchange().reply.headers.get('www-authenticate')).toMatch(/insufficient_scope/);
  });
});

describe('List Wallets (GET /v1/customer-portal/wallets/)', () => {
  const session = () => asSession(stack.demo.customer_session_token);

  it('the default request: Content-Type on a GET, Polar-Version and sorting=-created_at are accepted', async () => {
    const page = await polar.customerPortal.wallets.list({ limit: 100 }, session());
    const { url, method, sent, reply } = lastExchange();
    expect(method).toBe('GET');
    expect(url.pathname).toBe('/v1/customer-portal/wallets/');
    expect(url.searchParams.getAll('sorting')).toEqual(['-created_at']);
    expect(sent.get('content-type')).toBe('application/json');
    expect(sent.get('polar-version')).toBe('2026-10');
    expect(reply.status).toBe(200);
    expectDocumented('listWallets', reply);
    expect(page.pagination).toEqual({ total_count: 14, max_page: 1 });
    expectSorted(page.items, ['-created_at']);
    expectBalanceTies(page.items);
  });

  it.for(SORTING_CASES)(
    'sorting=$label: list() and the iterList() pager agree with the comparator',
    async ({ sorting }) => {
      const whole = await polar.customerPortal.wallets.list({ limit: 100, sorting }, session());
      expect(lastExchange().url.searchParams.getAll('sorting')).toEqual(sorting);
      expectDocumented('listWallets', lastExchange().reply);
      expect(whole.items).toHaveLength(14);
      expectSorted(whole.items, sorting);

      const before = exchanges.length;
      const paged = [];
      for await (const wallet of polar.customerPortal.wallets.iterList({ limit: 4, sorting }, session())) {
        paged.push(wallet.id);
      }
      expect(exchanges.length - before).toBe(4);
      expect(paged).toEqual(whole.items.map((w) => w.id));
    },
  );

  it.for(SORTING_CASES)(
    'large customer, sorting=$label: pages of 100 and 20 continue one order',
    async ({ sorting }) => {
      const token = asSession(stack.demo.large_customer_session_token);
      const first = await polar.customerPortal.wallets.list({ limit: 100, page: 1, sorting }, token);
      const second = await polar.customerPortal.wallets.list({ limit: 100, page: 2, sorting }, token);
      expect([first.items.length, second.items.length]).toEqual([100, 20]);
      expect(second.pagination).toEqual({ total_count: 120, max_page: 2 });
      expectSorted([...first.items, ...second.items], sorting);
    },
  );

  it('a limit above 100 is served as 100', async () => {
    const page = await polar.customerPortal.wallets.list(
      { limit: 250 },
      asSession(stack.demo.large_customer_session_token),
    );
    expect(page.items).toHaveLength(100);
    expect(page.pagination).toEqual({ total_count: 120, max_page: 2 });
  });

  it('page 0 → errors.HTTPValidationError at query.page', async () => {
    const error = (await failure(() =>
      polar.customerPortal.wallets.list({ page: 0 }, session()),
    )) as InstanceType<typeof errors.HTTPValidationError>;
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
    expect(error.statusCode).toBe(422);
    expect(error.error).toMatchObject({ detail: [{ loc: ['query', 'page'] }] });
  });

  it('an unknown sorting value → errors.HTTPValidationError at its index', async () => {
    const sorting = ['balance', 'name'] as unknown as ('balance' | '-balance')[];
    const error = (await failure(() =>
      polar.customerPortal.wallets.list({ sorting }, session()),
    )) as InstanceType<typeof errors.HTTPValidationError>;
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
    expect(error.error).toMatchObject({ detail: [{ loc: ['query', 'sorting', '1'] }] });
  });

  it('the PAT the client was built with is refused on the portal → PolarClientError 401', async () => {
    const error = (await failure(() => polar.customerPortal.wallets.list())) as PolarClientError<string>;
    expect(error).toBeInstanceOf(PolarClientError);
    expect(error.statusCode).toBe(401);
    expect(JSON.parse(error.error)).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
  });
});

describe('Delete Webhook Endpoint (DELETE /v1/webhooks/endpoints/{id})', () => {
  it('deletes with Content-Type on a bodiless DELETE (204); the second delete is errors.ResourceNotFound', async () => {
    const id = stack.demo.webhook_endpoint_ids[1] as string;
    await expect(polar.webhooks.deleteWebhookEndpoint(id)).resolves.toBeUndefined();
    const { method, sent, reply } = lastExchange();
    expect(method).toBe('DELETE');
    expect(sent.get('content-type')).toBe('application/json');
    expect(reply.status).toBe(204);
    expectDocumented('deleteWebhookEndpoint', reply);

    const error = await failure(() => polar.webhooks.deleteWebhookEndpoint(id));
    expect(error).toBeInstanceOf(errors.ResourceNotFound);
    const notFound = error as InstanceType<typeof errors.ResourceNotFound>;
    expect(notFound.statusCode).toBe(404);
    expect(notFound.error).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
    expectDocumented('deleteWebhookEndpoint', lastExchange().reply);
  });

  it('an uppercase id is accepted like the lowercase one (already deleted here: 404, not 422)', async () => {
    const id = (stack.demo.webhook_endpoint_ids[1] as string).toUpperCase();
    expect(await failure(() => polar.webhooks.deleteWebhookEndpoint(id))).toBeInstanceOf(
      errors.ResourceNotFound,
    );
  });

  it('a malformed id → errors.HTTPValidationError at path.id', async () => {
    const error = (await failure(() => polar.webhooks.deleteWebhookEndpoint('not-a-uuid'))) as InstanceType<
      typeof errors.HTTPValidationError
    >;
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
    expect(error.error).toMatchObject({ detail: [{ loc: ['path', 'id'] }] });
  });

  it('a customer session token on a PAT operation → PolarClientError 401', async () => {
    const error = (await failure(() =>
      polar.webhooks.deleteWebhookEndpoint(
        stack.demo.webhook_endpoint_ids[2] as string,
        asSession(stack.demo.customer_session_token),
      ),
    )) as PolarClientError<string>;
    expect(error).toBeInstanceOf(PolarClientError);
    expect(error.statusCode).toBe(401);
  });
});

describe('Create Customer Session (POST /v1/customer-sessions/)', () => {
  it('by customer id and by external id: the client accepts the 201 session', async () => {
    const byId = await polar.customerSessions.create({ customer_id: stack.demo.customer_id });
    const { reply } = lastExchange();
    expect(reply.status).toBe(201);
    expectDocumented('createCustomerSession', reply);
    expect(byId).toMatchObject({ customer_id: stack.demo.customer_id, return_url: null });
    const wallets = await polar.customerPortal.wallets.list({ limit: 1 }, asSession(byId.token));
    expect(wallets.pagination.total_count).toBe(14);

    const byExternalId = await polar.customerSessions.create({
      external_customer_id: stack.demo.customer_external_id,
    });
    expect(byExternalId.customer_id).toBe(stack.demo.customer_id);
  });

  it('an unknown customer → errors.HTTPValidationError', async () => {
    const error = await failure(() =>
      polar.customerSessions.create({ customer_id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' }),
    );
    expect(error).toBeInstanceOf(errors.HTTPValidationError);
  });
});

describe('Get Wallet (GET /v1/customer-portal/wallets/{id})', () => {
  it('the client gets a wallet with the session token; another id is errors.ResourceNotFound', async () => {
    const wallet = await polar.customerPortal.wallets.get(
      stack.demo.wallet_id,
      asSession(stack.demo.customer_session_token),
    );
    expectDocumented('getWallet', lastExchange().reply);
    expect(wallet).toMatchObject({
      id: stack.demo.wallet_id,
      customer_id: stack.demo.customer_id,
      balance: 123_456,
    });
    const error = await failure(() =>
      polar.customerPortal.wallets.get(
        '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b',
        asSession(stack.demo.customer_session_token),
      ),
    );
    expect(error).toBeInstanceOf(errors.ResourceNotFound);
  });
});

describe('Get Product and Get Subscription', () => {
  it('products.get and subscriptions.get parse the answers; an unknown id is errors.ResourceNotFound', async () => {
    const product = await polar.products.get(stack.demo.free_product_id);
    expectDocumented('getProduct', lastExchange().reply);
    expect(product).toMatchObject({ id: stack.demo.free_product_id, is_recurring: true });
    const subscription = await polar.subscriptions.get(stack.demo.subscription_id);
    expectDocumented('getSubscription', lastExchange().reply);
    expect(subscription).toMatchObject({
      id: stack.demo.subscription_id,
      product_id: stack.demo.free_product_id,
    });
    expect(await failure(() => polar.products.get('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b'))).toBeInstanceOf(
      errors.ResourceNotFound,
    );
  });
});

describe('Update and Revoke Subscription (PATCH, DELETE /v1/subscriptions/{id})', () => {
  it('subscriptions.update cancels and uncancels, subscriptions.revoke ends it; then the 403 errors', async () => {
    const created = await polar.subscriptions.create({
      product_id: stack.demo.free_product_id,
      customer_id: stack.demo.customer_id,
    });
    const canceled = await polar.subscriptions.update(created.id, {
      cancel_at_period_end: true,
      customer_cancellation_reason: 'missing_features',
    });
    expectDocumented('updateSubscription', lastExchange().reply);
    expect(canceled).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect(canceled.ends_at).toEqual(created.current_period_end);
    const back = await polar.subscriptions.update(created.id, { cancel_at_period_end: false });
    expect(back).toMatchObject({ cancel_at_period_end: false, canceled_at: null, ends_at: null });
    const revoked = await polar.subscriptions.revoke(created.id);
    expectDocumented('revokeSubscription', lastExchange().reply);
    expect(revoked).toMatchObject({ status: 'canceled' });
    expect(revoked.ended_at).not.toBeNull();
    // Update's 403 is a union (insufficient scope or already canceled): its own error class.
    const error = await failure(() => polar.subscriptions.update(created.id, { revoke: true }));
    expect(error).toBeInstanceOf(errors.SubscriptionsUpdate403Error);
    expect(lastExchange().reply.body).toMatchObject({ error: 'AlreadyCanceledSubscription' });
    expect(await failure(() => polar.subscriptions.revoke(created.id))).toBeInstanceOf(
      errors.AlreadyCanceledSubscription,
    );
  });
});

describe('Create and Get Customer (POST /v1/customers/, GET /v1/customers/{id})', () => {
  it('customers.create and customers.get parse the answers; a taken e-mail is errors.HTTPValidationError', async () => {
    const email = `sdk-v1-${Date.now()}@example.com`;
    const created = await polar.customers.create({ email, name: 'SDK v1', metadata: { plan: 'pro' } });
    expectDocumented('createCustomer', lastExchange().reply);
    expect(created).toMatchObject({ email, name: 'SDK v1', organization_id: stack.demo.organization_id });
    const read = await polar.customers.get(created.id);
    expectDocumented('getCustomer', lastExchange().reply);
    expect(read.id).toBe(created.id);
    const taken = await failure(() => polar.customers.create({ email }));
    expect(lastExchange().reply.status).toBe(422);
    expect(taken).toBeInstanceOf(Error);
    expect(lastExchange().reply.body).toMatchObject({ error: 'PolarRequestValidationError' });
  });
});

describe('List, Get by external id, Update and Delete Customer', () => {
  const ids = (items: { id: string }[]) => items.map((c) => c.id);

  it('customers.iterList walks every page, in the order one customers.list page gives', async () => {
    // The e2e files share one stack and run two at a time: the lists are scoped to this test's
    // customers (a name prefix of its own), or a customer another file creates meanwhile shows up.
    const tag = `sdk-v1-list-${Date.now()}`;
    for (let i = 0; i < 5; i++) {
      await polar.customers.create({ email: `${tag}-${i}@example.com`, name: `${tag} ${i}` });
    }
    const whole = await polar.customers.list({ limit: 100, sorting: ['-name', 'email'], query: tag });
    expectDocumented('listCustomers', lastExchange().reply);
    expect(whole.pagination.total_count).toBe(5);
    expect(whole.items.map((c) => c.name)).toEqual([4, 3, 2, 1, 0].map((i) => `${tag} ${i}`));
    const walked: { id: string }[] = [];
    for await (const customer of polar.customers.iterList({
      limit: 2,
      sorting: ['-name', 'email'],
      query: tag,
    })) {
      expectDocumented('listCustomers', lastExchange().reply);
      walked.push(customer);
    }
    expect(ids(walked)).toEqual(ids(whole.items));
    // Filters as the client sends them: email exact, query a prefix (any case).
    const [first] = whole.items;
    const byEmail = await polar.customers.list({ email: first?.email?.toUpperCase() ?? '' });
    expect(lastExchange().url.searchParams.get('email')).toBe(first?.email?.toUpperCase());
    expect(ids(byEmail.items)).toEqual([first?.id]);
    const byQuery = await polar.customers.list({
      query: tag.toUpperCase(),
      organization_id: stack.demo.organization_id,
    });
    expect(byQuery.items.length).toBe(5);
  });

  it('getExternal, update and updateExternal parse the answers; a taken e-mail is errors.HTTPValidationError', async () => {
    const externalId = `sdk v1/${Date.now()} é`;
    const created = await polar.customers.create({
      email: `sdk-v1-ext-${Date.now()}@example.com`,
      external_id: externalId,
    });
    const found = await polar.customers.getExternal(externalId);
    expectDocumented('getCustomerExternal', lastExchange().reply);
    expect(lastExchange().url.pathname).toBe(`/v1/customers/external/${encodeURIComponent(externalId)}`);
    expect(found.id).toBe(created.id);
    const updated = await polar.customers.update(created.id, {
      name: 'Renamed',
      billing_address: { country: 'FR', city: 'Lyon' },
      metadata: { tier: 'gold' },
    });
    expectDocumented('updateCustomer', lastExchange().reply);
    expect(updated).toMatchObject({ name: 'Renamed', metadata: { tier: 'gold' } });
    const byExternal = await polar.customers.updateExternal(externalId, { locale: 'fr' });
    expectDocumented('updateCustomerExternal', lastExchange().reply);
    expect(byExternal).toMatchObject({ id: created.id, name: 'Renamed', locale: 'fr' });
    const taken = await failure(() => polar.customers.update(created.id, { email: 'ada@customer.example' }));
    expect(taken).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({
      error: 'PolarRequestValidationError',
      detail: [{ loc: ['body', 'email'], msg: 'A customer with this email address already exists.' }],
    });
  });

  it('delete and deleteExternal resolve on the 204; then the customer is errors.ResourceNotFound', async () => {
    const one = await polar.customers.create({ email: `sdk-v1-del-${Date.now()}@example.com` });
    await polar.customers.delete(one.id, { anonymize: true });
    expect(lastExchange().reply.status).toBe(204);
    expect(lastExchange().url.searchParams.get('anonymize')).toBe('true');
    expect(await failure(() => polar.customers.get(one.id))).toBeInstanceOf(errors.ResourceNotFound);
    const externalId = `sdk-v1-del-${Date.now()}`;
    await polar.customers.create({ email: `${externalId}@example.com`, external_id: externalId });
    await polar.customers.deleteExternal(externalId);
    expect(lastExchange().reply.status).toBe(204);
    const gone = await failure(() => polar.customers.getExternal(externalId));
    expect(gone).toBeInstanceOf(errors.ResourceNotFound);
    expectDocumented('getCustomerExternal', lastExchange().reply);
    expect(await failure(() => polar.customers.deleteExternal(externalId))).toBeInstanceOf(
      errors.ResourceNotFound,
    );
  });
});

describe('Create, List and Update Product (POST, GET /v1/products/, PATCH /v1/products/{id})', () => {
  it('products.create and products.update parse the answers; the plan serves Create Subscription', async () => {
    const created = await polar.products.create({
      name: 'SDK v1 plan',
      recurring_interval: 'month',
      prices: [{ amount_type: 'fixed', price_amount: 0 }],
      metadata: { source: 'sdk-v1' },
    });
    expect(lastExchange().reply.status).toBe(201);
    expectDocumented('createProduct', lastExchange().reply);
    expect(created).toMatchObject({
      name: 'SDK v1 plan',
      is_recurring: true,
      organization_id: stack.demo.organization_id,
      metadata: { source: 'sdk-v1' },
      prices: [{ amount_type: 'fixed', price_amount: 0, price_currency: 'usd' }],
    });
    const subscription = await polar.subscriptions.create({
      product_id: created.id,
      customer_id: stack.demo.customer_id,
    });
    expect(subscription.product.id).toBe(created.id);

    const updated = await polar.products.update(created.id, {
      name: 'SDK v1 plan, archived',
      is_archived: true,
      prices: [{ amount_type: 'fixed', price_amount: 900 }],
    });
    expectDocumented('updateProduct', lastExchange().reply);
    expect(updated).toMatchObject({ name: 'SDK v1 plan, archived', is_archived: true });
    expect(updated.prices.map((p) => ('price_amount' in p ? p.price_amount : null))).toEqual([900]);
    const refused = await failure(() =>
      polar.subscriptions.create({ product_id: created.id, customer_id: stack.demo.customer_id }),
    );
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({ detail: [{ msg: 'Product is archived.' }] });
  });

  it('products.iterList walks every page of a filtered, sorted list; the pages agree with one list()', async () => {
    for (const name of ['sdk-v1 list a', 'SDK-V1 LIST B', 'sdk-v1 list c']) {
      await polar.products.create({ name, prices: [{ amount_type: 'fixed', price_amount: 100 }] });
    }
    const whole = await polar.products.list({ query: 'sdk-v1 list', sorting: ['-name'], limit: 100 });
    expectDocumented('listProducts', lastExchange().reply);
    expect(whole.items.map((p) => p.name)).toEqual(['sdk-v1 list c', 'SDK-V1 LIST B', 'sdk-v1 list a']);
    expect(whole.pagination).toEqual({ total_count: 3, max_page: 1 });

    const before = exchanges.length;
    const walked: string[] = [];
    for await (const product of polar.products.iterList({
      is_recurring: false,
      sorting: ['name'],
      limit: 2,
    })) {
      walked.push(product.name);
    }
    const pages = exchanges.slice(before);
    for (const page of pages) expectDocumented('listProducts', page.reply);
    expect(pages[0]?.url.searchParams.get('is_recurring')).toBe('false');
    const first = pages[0]?.reply.body as { pagination: { total_count: number } } | undefined;
    const total = first?.pagination.total_count ?? -1;
    expect(walked).toHaveLength(total);
    expect(pages).toHaveLength(Math.ceil(total / 2));
    const lower = walked.map((name) => name.toLowerCase());
    expect(lower).toEqual([...lower].sort());
    expect(walked).toEqual(expect.arrayContaining(['sdk-v1 list a', 'SDK-V1 LIST B', 'Free e-book']));
  });

  it('a price type this API refuses, and a filter it does not support, are errors.HTTPValidationError', async () => {
    const custom = await failure(() =>
      polar.products.create({ name: 'Pay what you want', prices: [{ amount_type: 'custom' }] }),
    );
    expect(custom).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({
      error: 'RequestValidationError',
      detail: [{ loc: ['body', 'prices', '0', 'amount_type'], type: 'enum' }],
    });
    const filtered = await failure(() => polar.products.list({ visibility: ['public'] }));
    expect(filtered).toBeInstanceOf(errors.HTTPValidationError);
    expectDocumented('listProducts', lastExchange().reply);
    const unknown = await failure(() =>
      polar.products.update('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b', { name: 'Nope' }),
    );
    expect(unknown).toBeInstanceOf(errors.ResourceNotFound);
  });
});

describe('Webhook endpoints with a webhooks:write and a webhooks:read credential', () => {
  it('the writer: every call parses, with the real secret; the reader: Get and List parse with the placeholder, the writes are PolarClientError 403', async () => {
    const writer = asSession(await scopedToken(stack, 'webhooks:write'));
    const reader = asSession(await scopedToken(stack, 'webhooks:read'));
    const created = await polar.webhooks.createWebhookEndpoint(
      { url: 'https://hooks.example.com/sdk-v1-scoped', format: 'raw', events: ['customer.created'] },
      writer,
    );
    expectDocumented('createWebhookEndpoint', lastExchange().reply);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await polar.webhooks.getWebhookEndpoint(created.id, writer)).secret).toBe(created.secret);
    const renamed = await polar.webhooks.updateWebhookEndpoint(created.id, { name: 'scoped' }, writer);
    expect(renamed.secret).toBe(created.secret);
    const reset = await polar.webhooks.resetWebhookEndpointSecret(created.id, writer);
    expect(reset.secret).not.toBe(created.secret);
    const writerSecrets: string[] = [];
    for await (const endpoint of polar.webhooks.iterListWebhookEndpoints({ limit: 100 }, writer)) {
      writerSecrets.push(endpoint.secret);
    }
    expect(writerSecrets).toContain(reset.secret);

    const read = await polar.webhooks.getWebhookEndpoint(created.id, reader);
    expectDocumented('getWebhookEndpoint', lastExchange().reply);
    expect(read).toMatchObject({ id: created.id, name: 'scoped', secret: WEBHOOK_SECRET_PLACEHOLDER });
    const readerSecrets: string[] = [];
    for await (const endpoint of polar.webhooks.iterListWebhookEndpoints({ limit: 100 }, reader)) {
      readerSecrets.push(endpoint.secret);
    }
    expectDocumented('listWebhookEndpoints', lastExchange().reply);
    expect(readerSecrets.length).toBeGreaterThan(0);
    expect(new Set(readerSecrets)).toEqual(new Set([WEBHOOK_SECRET_PLACEHOLDER]));
    const writes = [
      () =>
        polar.webhooks.createWebhookEndpoint(
          { url: 'https://hooks.example.com/r', format: 'raw', events: [] },
          reader,
        ),
      () => polar.webhooks.updateWebhookEndpoint(created.id, { name: 'r' }, reader),
      () => polar.webhooks.resetWebhookEndpointSecret(created.id, reader),
      () => polar.webhooks.deleteWebhookEndpoint(created.id, reader),
    ];
    for (const write of writes) {
      const error = (await failure(write)) as PolarClientError<string>;
      expect(error).toBeInstanceOf(PolarClientError);
      expect(error.statusCode).toBe(403);
    }
    await expect(polar.webhooks.deleteWebhookEndpoint(created.id, writer)).resolves.toBeUndefined();
  });
});

describe('Webhook endpoints (POST, GET /v1/webhooks/endpoints, GET, PATCH /{id}, PATCH /{id}/secret)', () => {
  it('webhooks.createWebhookEndpoint, getWebhookEndpoint, updateWebhookEndpoint, resetWebhookEndpointSecret', async () => {
    const created = await polar.webhooks.createWebhookEndpoint({
      url: 'https://hooks.example.com/sdk-v1',
      name: 'SDK v1',
      format: 'raw',
      events: ['subscription.created', 'customer.created'],
    });
    expect(lastExchange().url.pathname).toBe('/v1/webhooks/endpoints');
    expectDocumented('createWebhookEndpoint', lastExchange().reply);
    expect(lastExchange().reply.status).toBe(201);
    expect(created).toMatchObject({
      url: 'https://hooks.example.com/sdk-v1',
      organization_id: stack.demo.organization_id,
      api_version: '2026-10',
      uses_standard_webhook_signature: true,
      enabled: true,
    });
    expect(created.secret).toMatch(/^whsec_/);

    const read = await polar.webhooks.getWebhookEndpoint(created.id);
    expectDocumented('getWebhookEndpoint', lastExchange().reply);
    expect(read).toEqual(created);

    const updated = await polar.webhooks.updateWebhookEndpoint(created.id, {
      name: 'SDK v1, renamed',
      events: ['product.created'],
      enabled: false,
    });
    expectDocumented('updateWebhookEndpoint', lastExchange().reply);
    expect(updated).toMatchObject({ name: 'SDK v1, renamed', events: ['product.created'], enabled: false });

    const reset = await polar.webhooks.resetWebhookEndpointSecret(created.id);
    expect(lastExchange().url.pathname).toBe(`/v1/webhooks/endpoints/${created.id}/secret`);
    expectDocumented('resetWebhookEndpointSecret', lastExchange().reply);
    expect(reset.secret).toMatch(/^whsec_/);
    expect(reset.secret).not.toBe(created.secret);
  });

  it('listWebhookEndpoints pages and the iterListWebhookEndpoints pager walks every page', async () => {
    const page = await polar.webhooks.listWebhookEndpoints({ limit: 2 });
    expectDocumented('listWebhookEndpoints', lastExchange().reply);
    const total = page.pagination.total_count;
    expect(page.pagination.max_page).toBe(Math.ceil(total / 2));
    const seen: string[] = [];
    for await (const endpoint of polar.webhooks.iterListWebhookEndpoints({ limit: 2 })) {
      expect(endpoint.secret).toMatch(/^whsec_/);
      seen.push(endpoint.id);
    }
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
  });

  it('a private address is errors.HTTPValidationError; another organization’s endpoint errors.ResourceNotFound', async () => {
    const refused = await failure(() =>
      polar.webhooks.createWebhookEndpoint({ url: 'https://169.254.169.254/', format: 'raw', events: [] }),
    );
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({ detail: [{ loc: ['body', 'url'] }] });
    const foreign = await failure(() =>
      polar.webhooks.getWebhookEndpoint(stack.demo.other_organization.webhook_endpoint_id),
    );
    expect(foreign).toBeInstanceOf(errors.ResourceNotFound);
  });
});

describe('List Subscriptions (GET /v1/subscriptions/)', () => {
  it('subscriptions.iterList walks every page of a filtered, sorted list; list() answers documented pages', async () => {
    const customer = await polar.customers.create({ email: `sdk-v1-list-${Date.now()}@example.com` });
    const created = [];
    for (let i = 0; i < 5; i++) {
      created.push(
        await polar.subscriptions.create({
          product_id: stack.demo.free_product_id,
          customer_id: customer.id,
        }),
      );
    }
    // The pager stops at `max_page`, from the total: walked once the stream's projection counted the
    // five signups and then the revoke (the counts lag the writes: docs/data-model.md, "Subscription
    // counts"; until the revoke is counted, its entry read in its new segment counts it twice).
    const total = async (active?: boolean) =>
      (await polar.subscriptions.list({ customer_id: customer.id, limit: 1, ...(active ? { active } : {}) }))
        .pagination.total_count;
    await countsSettled(() => total(), 5, "the customer's subscriptions counted");
    const revoked = await polar.subscriptions.revoke(created[1]?.id as string);
    await countsSettled(() => total(true), 4, "the customer's revoke counted");
    const walked = [];
    for await (const subscription of polar.subscriptions.iterList({
      customer_id: customer.id,
      limit: 2,
      sorting: ['status', '-started_at'],
    })) {
      expectDocumented('listSubscriptions', lastExchange().reply);
      walked.push(subscription);
    }
    const live = created.filter((s) => s.id !== revoked.id).reverse();
    // Active first (by status name), newest first within; the revoked one last, as ended.
    expect(walked.map((s) => s.id)).toEqual([...live.map((s) => s.id), revoked.id]);
    expect(walked.at(-1)).toEqual(revoked);
    const page = await polar.subscriptions.list({
      customer_id: [customer.id],
      product_id: [stack.demo.free_product_id],
      active: true,
      limit: 3,
      page: 2,
    });
    expectDocumented('listSubscriptions', lastExchange().reply);
    expect(page.pagination).toEqual({ total_count: 4, max_page: 2 });
    expect(page.items).toHaveLength(1);
    const refused = await failure(() => polar.subscriptions.list({ sorting: ['customer'] }));
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({ detail: [{ loc: ['query', 'sorting', '0'] }] });
  });
});

describe('Customer portal subscriptions (/v1/customer-portal/subscriptions/)', () => {
  it('list, iterList, get, cancel (DELETE), update (uncancel) with a customer session; the error classes', async () => {
    const customer = await polar.customers.create({ email: `sdk-v1-portal-${Date.now()}@example.com` });
    const session = await polar.customerSessions.create({ customer_id: customer.id });
    const as = asSession(session.token);
    const created = [];
    for (let i = 0; i < 3; i++) {
      created.push(
        await polar.subscriptions.create({
          product_id: stack.demo.free_product_id,
          customer_id: customer.id,
        }),
      );
    }
    await countsSettled(
      async () => (await polar.customerPortal.subscriptions.list({ limit: 1 }, as)).pagination.total_count,
      3,
      "the portal customer's subscriptions counted",
    );
    const page = await polar.customerPortal.subscriptions.list({ limit: 2 }, as);
    expectDocumented('listCustomerSubscriptions', lastExchange().reply);
    expect(page.pagination).toEqual({ total_count: 3, max_page: 2 });
    const walked = [];
    for await (const subscription of polar.customerPortal.subscriptions.iterList({ limit: 2 }, as)) {
      expectDocumented('listCustomerSubscriptions', lastExchange().reply);
      walked.push(subscription.id);
    }
    expect(walked).toEqual(created.map((s) => s.id).reverse());
    const target = created[0]?.id as string;
    const read = await polar.customerPortal.subscriptions.get(target, as);
    expectDocumented('getCustomerSubscription', lastExchange().reply);
    expect(read.product.organization.id).toBe(stack.demo.organization_id);
    const canceled = await polar.customerPortal.subscriptions.cancel(target, as);
    expectDocumented('cancelCustomerSubscription', lastExchange().reply);
    expect(canceled).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect(await failure(() => polar.customerPortal.subscriptions.cancel(target, as))).toBeInstanceOf(
      errors.AlreadyCanceledSubscription,
    );
    const back = await polar.customerPortal.subscriptions.update(target, { cancel_at_period_end: false }, as);
    expectDocumented('updateCustomerSubscription', lastExchange().reply);
    expect(back).toMatchObject({ cancel_at_period_end: false, canceled_at: null });
    // Uncancel of one not set to cancel: the 409 the 1.x client knows by its own class.
    const notScheduled = await failure(() =>
      polar.customerPortal.subscriptions.update(target, { cancel_at_period_end: false }, as),
    );
    expect(notScheduled).toBeInstanceOf(errors.CustomerPortalSubscriptionsUpdate409Error);
    expect(lastExchange().reply.body).toMatchObject({ error: 'SubscriptionNotScheduledToCancel' });
    const reason = await polar.customerPortal.subscriptions.update(
      target,
      {
        cancel_at_period_end: true,
        cancellation_reason: 'too_complex',
        cancellation_comment: 'Too many knobs.',
      },
      as,
    );
    expect(reason).toMatchObject({
      customer_cancellation_reason: 'too_complex',
      customer_cancellation_comment: 'Too many knobs.',
    });
    const again = await failure(() =>
      polar.customerPortal.subscriptions.update(target, { cancel_at_period_end: true }, as),
    );
    expect(again).toBeInstanceOf(errors.CustomerPortalSubscriptionsUpdate403Error);
    expect(
      await failure(() => polar.customerPortal.subscriptions.get(stack.demo.subscription_id, as)),
    ).toBeInstanceOf(errors.ResourceNotFound);
  });
});

describe('Webhook deliveries (GET /v1/webhooks/deliveries, POST /v1/webhooks/events/{id}/redeliver)', () => {
  it('listWebhookDeliveries pages and iterListWebhookDeliveries walks every page of an endpoint', async () => {
    const endpointId = stack.demo.webhook_endpoint_ids[1] as string;
    const page = await polar.webhooks.listWebhookDeliveries({ endpoint_id: endpointId, limit: 1 });
    expect(lastExchange().url.pathname).toBe('/v1/webhooks/deliveries');
    expectDocumented('listWebhookDeliveries', lastExchange().reply);
    const total = page.pagination.total_count;
    expect(total).toBeGreaterThan(0);
    expect(page.pagination.max_page).toBe(total);
    const seen: string[] = [];
    for await (const delivery of polar.webhooks.iterListWebhookDeliveries({
      endpoint_id: [endpointId],
      limit: 1,
    })) {
      expectDocumented('listWebhookDeliveries', lastExchange().reply);
      seen.push(delivery.webhook_event.id);
    }
    expect(seen).toHaveLength(total);
    expect(seen).toContain(stack.demo.webhook_event_id);
  });

  it('redeliverWebhookEvent: 202 with a null body; an unknown event errors.ResourceNotFound', async () => {
    await expect(polar.webhooks.redeliverWebhookEvent(stack.demo.webhook_event_id)).resolves.toBeNull();
    expect(lastExchange().url.pathname).toBe(`/v1/webhooks/events/${stack.demo.webhook_event_id}/redeliver`);
    expect(lastExchange().reply.status).toBe(202);
    expectDocumented('redeliverWebhookEvent', lastExchange().reply);
    const unknown = await failure(() => polar.webhooks.redeliverWebhookEvent(crypto.randomUUID()));
    expect(unknown).toBeInstanceOf(errors.ResourceNotFound);
  });

  it('a filter no key answers (event_type) is errors.HTTPValidationError naming it', async () => {
    const refused = await failure(() => polar.webhooks.listWebhookDeliveries({ event_type: 'order.paid' }));
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({
      error: 'PolarRequestValidationError',
      detail: [{ loc: ['query', 'event_type'] }],
    });
  });
});

describe('Meters (POST, GET /v1/meters/, GET, PATCH /v1/meters/{id}) and a metered price', () => {
  it('meters.create, get, list, iterList and update: every answer the document allows; a metered price on a product', async () => {
    const created = await polar.meters.create({
      name: 'SDK v1 tokens',
      filter: {
        conjunction: 'and',
        clauses: [
          { property: 'name', operator: 'eq', value: 'llm.call' },
          { conjunction: 'or', clauses: [{ property: 'metadata.model', operator: 'like', value: 'gpt' }] },
        ],
      },
      aggregation: { func: 'sum', property: 'metadata.tokens' },
      metadata: { source: 'sdk-v1' },
    });
    expect(lastExchange().reply.status).toBe(201);
    expectDocumented('createMeter', lastExchange().reply);
    expect(created).toMatchObject({
      name: 'SDK v1 tokens',
      unit: 'scalar',
      organization_id: stack.demo.organization_id,
      aggregation: { func: 'sum', property: 'tokens' },
      archived_at: null,
    });
    expect(await polar.meters.get(created.id)).toEqual(created);
    expectDocumented('getMeter', lastExchange().reply);
    const listed = await polar.meters.list({ query: 'SDK v1', sorting: ['name'] });
    expectDocumented('listMeters', lastExchange().reply);
    expect(listed.items.map((m) => m.id)).toContain(created.id);
    const walked: string[] = [];
    for await (const meter of polar.meters.iterList({ limit: 1, is_archived: false })) walked.push(meter.id);
    expect(walked).toContain(created.id);
    const updated = await polar.meters.update(created.id, {
      name: 'SDK v1 tokens, archived',
      is_archived: true,
    });
    expectDocumented('updateMeter', lastExchange().reply);
    expect(updated.archived_at).not.toBeNull();
    expect(await failure(() => polar.meters.get('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b'))).toBeInstanceOf(
      errors.ResourceNotFound,
    );
    const refused = await failure(() =>
      polar.meters.create({
        name: 'Bad',
        filter: { conjunction: 'and', clauses: [] },
        aggregation: { func: 'median' } as never,
      }),
    );
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);

    const live = await polar.meters.create({
      name: 'SDK v1 calls',
      filter: { conjunction: 'and', clauses: [] },
      aggregation: { func: 'count' },
    });
    const product = await polar.products.create({
      name: 'SDK v1 usage plan',
      recurring_interval: 'month',
      prices: [
        { amount_type: 'fixed', price_amount: 0 },
        { amount_type: 'metered_unit', unit_amount: '0.25', cap_amount: 5000, meter_id: live.id },
      ],
    });
    expectDocumented('createProduct', lastExchange().reply);
    expect(product.prices[1]).toMatchObject({
      amount_type: 'metered_unit',
      unit_amount: '0.25',
      meter_id: live.id,
    });
  });
});

describe('Events (POST /v1/events/ingest, GET /v1/events/, /v1/events/{id}, /v1/events/names)', () => {
  it('events.ingest, events.list, events.get and events.listNames: every answer documented, duplicates counted', async () => {
    const run = `sdk-v1-${Date.now()}`;
    const events = [
      {
        name: `${run}-call`,
        customer_id: stack.demo.customer_id,
        external_id: `${run}-1`,
        timestamp: new Date(Date.now() - 60_000).toISOString(),
        metadata: { tokens: 12, _cost: { amount: 0.25, currency: 'usd' } },
      },
      { name: `${run}-call`, external_customer_id: `${run}-ext`, external_id: `${run}-2` },
      { name: `${run}-call`, customer_id: stack.demo.customer_id, external_id: `${run}-1` },
    ];
    const ingested = await polar.events.ingest({ events });
    expectDocumented('ingestEvents', lastExchange().reply);
    expect(ingested).toEqual({ inserted: 2, duplicates: 1 });
    expect(await polar.events.ingest({ events })).toEqual({ inserted: 0, duplicates: 3 });

    const page = await polar.events.list({
      start_timestamp: new Date(Date.now() - 3_600_000).toISOString(),
      name: `${run}-call`,
      limit: 10,
    });
    expectDocumented('listEvents', lastExchange().reply);
    expect(lastExchange().url.searchParams.get('sorting')).toBe('-timestamp');
    expect(page.pagination).toMatchObject({ total_count: 2 });
    const [newest] = page.items;
    expect(newest).toMatchObject({ external_customer_id: `${run}-ext`, customer: null, source: 'user' });
    const unfiltered = await polar.events.list({ limit: 5 });
    expectDocumented('listEvents', lastExchange().reply);
    expect(unfiltered.items.length).toBeGreaterThan(0);

    const read = await polar.events.get(page.items[1]?.id as string);
    expectDocumented('getEvent', lastExchange().reply);
    expect(read).toMatchObject({
      customer_id: stack.demo.customer_id,
      metadata: { tokens: 12, _cost: { amount: 0.25, currency: 'usd' } },
    });
    expect(await failure(() => polar.events.get('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b'))).toBeInstanceOf(
      errors.ResourceNotFound,
    );

    const names = await polar.events.listNames({ query: run });
    expectDocumented('listEventNames', lastExchange().reply);
    expect(lastExchange().url.searchParams.get('sorting')).toBe('-last_seen');
    expect(names.items).toEqual([expect.objectContaining({ name: `${run}-call`, occurrences: 2 })]);

    const refused = await failure(() =>
      polar.events.ingest({
        events: [{ name: 'x', customer_id: stack.demo.customer_id, timestamp: '2999-01-01T00:00:00Z' }],
      }),
    );
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({
      detail: [{ loc: ['body', 'events', '0', 'timestamp'] }],
    });
  });
});

describe('Customer meters (GET /v1/customer-meters/, /v1/customer-meters/{id})', () => {
  it('customerMeters.list, iterList and get: events ingested through the SDK, folded by the local pipeline, every answer documented', async () => {
    const run = `sdk-v1-cm-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `SDK v1 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'sum', property: 'tokens' },
    });
    const events = [5, 0.5, 12].map((tokens, i) => ({
      name: run,
      customer_id: stack.demo.customer_id,
      external_id: `${run}-${i}`,
      metadata: { tokens },
    }));
    expect(await polar.events.ingest({ events })).toEqual({ inserted: 3, duplicates: 0 });
    // The aggregator folds them a moment later (the local pipeline, freshness in the bench).
    let listed: Awaited<ReturnType<typeof polar.customerMeters.list>> | undefined;
    await waitFor(
      async () => {
        listed = await polar.customerMeters.list({ customer_id: stack.demo.customer_id, meter_id: meter.id });
        return listed.items[0]?.consumed_units === 17.5;
      },
      15_000,
      'the customer meter to count the three events',
    );
    expectDocumented('listCustomerMeters', lastExchange().reply);
    expect(lastExchange().url.searchParams.get('sorting')).toBe('-modified_at');
    const [item] = listed?.items ?? [];
    expect(item).toMatchObject({
      customer_id: stack.demo.customer_id,
      meter_id: meter.id,
      consumed_units: 17.5,
      credited_units: 0,
      balance: -17.5,
      customer: { id: stack.demo.customer_id },
      meter: { id: meter.id },
    });
    const read = await polar.customerMeters.get(item?.id as string);
    expectDocumented('getCustomerMeter', lastExchange().reply);
    expect(read).toEqual(item);
    const walked: string[] = [];
    for await (const customerMeter of polar.customerMeters.iterList({
      external_customer_id: stack.demo.customer_external_id,
      limit: 1,
    })) {
      expectDocumented('listCustomerMeters', lastExchange().reply);
      walked.push(customerMeter.id);
    }
    expect(walked).toContain(item?.id);
    expect(
      await failure(() => polar.customerMeters.get('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b')),
    ).toBeInstanceOf(errors.ResourceNotFound);
    const refused = await failure(() => polar.customerMeters.list({ sorting: ['-balance'] }));
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({ detail: [{ loc: ['query', 'sorting'] }] });
  });
});

describe('Meter quantities (GET /v1/meters/{id}/quantities)', () => {
  it('meters.quantities: events ingested through the SDK, by hour and by day, per customer; every answer documented', async () => {
    const run = `sdk-v1-q-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `SDK v1 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'sum', property: 'tokens' },
    });
    const events = [5, 0.5, 12].map((tokens, i) => ({
      name: run,
      customer_id: stack.demo.customer_id,
      external_id: `${run}-${i}`,
      metadata: { tokens },
    }));
    expect(await polar.events.ingest({ events })).toEqual({ inserted: 3, duplicates: 0 });
    // The window around now: the events count in the hour they arrive in.
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const window = {
      start_timestamp: new Date(hour - 3_600_000).toISOString(),
      end_timestamp: new Date(hour + 3_600_000).toISOString(),
    };
    let answer: Awaited<ReturnType<typeof polar.meters.quantities>> | undefined;
    await waitFor(
      async () => {
        answer = await polar.meters.quantities(meter.id, { ...window, interval: 'hour' });
        return answer.total === 17.5;
      },
      15_000,
      'the quantities to count the three events',
    );
    expectDocumented('getMeterQuantities', lastExchange().reply);
    // The SDK sends its default time zone.
    expect(lastExchange().url.searchParams.get('timezone')).toBe('UTC');
    const sum = (answer?.quantities ?? []).reduce((total, q) => total + q.quantity, 0);
    expect(answer?.quantities).toHaveLength(3);
    expect(sum).toBe(17.5);
    // From the day before: a window's buckets start at each `start + k days`, so a window of the two
    // hours around a local midnight would hold only the day before it, not the events' (run at
    // 23:00-00:00 UTC, Paris's midnight hour, this answered 0).
    const byDay = await polar.meters.quantities(meter.id, {
      ...window,
      start_timestamp: new Date(hour - 86_400_000).toISOString(),
      interval: 'day',
      timezone: 'Europe/Paris',
      external_customer_id: stack.demo.customer_external_id,
      customer_aggregation_function: 'max',
    });
    expectDocumented('getMeterQuantities', lastExchange().reply);
    expect(byDay.total).toBe(17.5);
    const none = await polar.meters.quantities(meter.id, {
      ...window,
      interval: 'day',
      customer_id: [stack.demo.other_organization.customer_id],
    });
    expect(none.total).toBe(0);
    expect(
      await failure(() =>
        polar.meters.quantities('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b', { ...window, interval: 'day' }),
      ),
    ).toBeInstanceOf(errors.ResourceNotFound);
    const refused = await failure(() =>
      polar.meters.quantities(meter.id, {
        start_timestamp: window.end_timestamp,
        end_timestamp: window.start_timestamp,
        interval: 'day',
      }),
    );
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({ detail: [{ loc: ['query', 'end_timestamp'] }] });
  });
});

describe('Customer portal meters (GET /v1/customer-portal/meters/, /v1/customer-portal/meters/{id})', () => {
  it('customerPortal.customerMeters.list, iterList and get: the session customer’s meters only, every answer documented', async () => {
    const run = `sdk-v1-pm-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `Portal ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'count' },
    });
    const other = await polar.customers.create({ email: `${run}@example.com` });
    const otherSession = asSession((await polar.customerSessions.create({ customer_id: other.id })).token);
    const session = asSession(stack.demo.customer_session_token);
    const events = [stack.demo.customer_id, stack.demo.customer_id, other.id].map((customer_id, i) => ({
      name: run,
      customer_id,
      external_id: `${run}-${i}`,
    }));
    expect(await polar.events.ingest({ events })).toEqual({ inserted: 3, duplicates: 0 });
    let listed: Awaited<ReturnType<typeof polar.customerPortal.customerMeters.list>> | undefined;
    await waitFor(
      async () => {
        listed = await polar.customerPortal.customerMeters.list({ meter_id: meter.id }, session);
        return listed.items[0]?.consumed_units === 2;
      },
      15_000,
      'the customer meter to count the two events',
    );
    expectDocumented('listPortalMeters', lastExchange().reply);
    expect(lastExchange().url.pathname).toBe('/v1/customer-portal/meters/');
    expect(listed?.pagination).toEqual({ total_count: 1, max_page: 1 });
    const [item] = listed?.items ?? [];
    expect(item).toEqual({
      id: expect.any(String),
      created_at: expect.any(String),
      modified_at: null,
      customer_id: stack.demo.customer_id,
      meter_id: meter.id,
      consumed_units: 2,
      credited_units: 0,
      balance: -2,
      meter: { id: meter.id, name: meter.name, created_at: meter.created_at, modified_at: meter.modified_at },
    });
    const read = await polar.customerPortal.customerMeters.get(item?.id as string, session);
    expectDocumented('getPortalMeter', lastExchange().reply);
    expect(read).toEqual(item);
    // The name filter (ignoring case) and the walk over pages of one.
    const walked: string[] = [];
    for await (const customerMeter of polar.customerPortal.customerMeters.iterList(
      { query: run.toUpperCase(), limit: 1 },
      session,
    )) {
      expectDocumented('listPortalMeters', lastExchange().reply);
      walked.push(customerMeter.id);
    }
    expect(walked).toEqual([item?.id]);
    // The other customer sees its own customer meter of the meter, never ours.
    let theirs: Awaited<ReturnType<typeof polar.customerPortal.customerMeters.list>> | undefined;
    await waitFor(
      async () => {
        theirs = await polar.customerPortal.customerMeters.list({ meter_id: meter.id }, otherSession);
        return theirs.items[0]?.consumed_units === 1;
      },
      15_000,
      'the other customer’s customer meter to count its event',
    );
    expect(theirs?.items.map((i) => i.customer_id)).toEqual([other.id]);
    const hidden = await failure(() =>
      polar.customerPortal.customerMeters.get(item?.id as string, otherSession),
    );
    expect(hidden).toBeInstanceOf(errors.ResourceNotFound);
    expectDocumented('getPortalMeter', lastExchange().reply);
    const refused = await failure(() =>
      polar.customerPortal.customerMeters.list({ sorting: ['-balance'] }, session),
    );
    expect(refused).toBeInstanceOf(errors.HTTPValidationError);
    expect(lastExchange().reply.body).toMatchObject({ detail: [{ loc: ['query', 'sorting'] }] });
    // A personal access token is the wrong kind of credential here.
    const wrongKind = (await failure(() =>
      polar.customerPortal.customerMeters.list(),
    )) as PolarClientError<string>;
    expect(wrongKind.statusCode).toBe(401);
  });
});

describe('Customer state (GET /v1/customers/{id}/state, /v1/customers/external/{external_id}/state)', () => {
  it('customers.getState and getStateExternal: the customer, its active subscription, its meter folded by the local pipeline; every answer documented', async () => {
    const run = `sdk-v1-state-${Date.now()}`;
    const customer = await polar.customers.create({ email: `${run}@example.com`, external_id: run });
    const subscription = await polar.subscriptions.create({
      product_id: stack.demo.free_product_id,
      customer_id: customer.id,
    });
    const meter = await polar.meters.create({
      name: `SDK v1 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'count' },
    });
    await polar.events.ingest({
      events: [
        { name: run, customer_id: customer.id, external_id: `${run}-0` },
        { name: run, external_customer_id: run, external_id: `${run}-1` },
      ],
    });
    let state: models.CustomerState | undefined;
    // Settled once both routes agree: the aggregator writes each meter's customer meter on its own,
    // so a read in the middle of its batch may miss another suite's catch-all meter counting these.
    await waitFor(
      async () => {
        const external = await polar.customers.getStateExternal(run);
        state = await polar.customers.getState(customer.id);
        return (
          state.active_meters.some((m) => m.meter_id === meter.id && m.consumed_units === 2) &&
          isDeepStrictEqual(state, external)
        );
      },
      15_000,
      'the customer state to count the two events',
    );
    expectDocumented('getCustomerState', lastExchange().reply);
    expect(lastExchange().url.pathname).toBe(`/v1/customers/${customer.id}/state`);
    expect(state).toMatchObject({
      id: customer.id,
      type: 'individual',
      external_id: run,
      email: `${run}@example.com`,
      organization_id: stack.demo.organization_id,
      deleted_at: null,
      active_subscriptions: [
        {
          id: subscription.id,
          status: 'active',
          product_id: stack.demo.free_product_id,
          amount: 0,
          cancel_at_period_end: false,
          meters: [],
        },
      ],
      granted_benefits: [],
    });
    expect(state?.active_meters.find((m) => m.meter_id === meter.id)).toEqual({
      id: expect.any(String),
      created_at: expect.any(String),
      modified_at: null,
      meter_id: meter.id,
      consumed_units: 2,
      credited_units: 0,
      balance: -2,
    });
    // Every field the 1.x typing requires of an individual customer's state and its parts.
    const required: (keyof Extract<models.CustomerState, { type: 'individual' }>)[] = [
      'id',
      'created_at',
      'modified_at',
      'metadata',
      'email',
      'email_verified',
      'type',
      'name',
      'billing_name',
      'billing_address',
      'tax_id',
      'organization_id',
      'deleted_at',
      'first_user_event_at',
      'avatar_url',
      'active_subscriptions',
      'granted_benefits',
      'active_meters',
    ];
    for (const key of required) expect(state, key).toHaveProperty(key);
    const subscriptionRequired: (keyof models.CustomerState['active_subscriptions'][number])[] = [
      'id',
      'created_at',
      'modified_at',
      'metadata',
      'status',
      'amount',
      'currency',
      'recurring_interval',
      'current_period_start',
      'current_period_end',
      'trial_start',
      'trial_end',
      'cancel_at_period_end',
      'canceled_at',
      'started_at',
      'ends_at',
      'product_id',
      'discount_id',
      'seats',
      'units',
      'meters',
    ];
    for (const key of subscriptionRequired) expect(state?.active_subscriptions[0], key).toHaveProperty(key);
    const external = await polar.customers.getStateExternal(run);
    expectDocumented('getCustomerStateExternal', lastExchange().reply);
    expect(external).toEqual(state);
    expect(
      await failure(() => polar.customers.getState('6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b')),
    ).toBeInstanceOf(errors.ResourceNotFound);
    expectDocumented('getCustomerState', lastExchange().reply);
    expect(await failure(() => polar.customers.getStateExternal(`${run}-unknown`))).toBeInstanceOf(
      errors.ResourceNotFound,
    );
    expectDocumented('getCustomerStateExternal', lastExchange().reply);
  });
});

describe('Subscription meters (subscriptions.get / list, customerPortal.subscriptions.get / list)', () => {
  it('a subscription holding metered prices: its meters filled from the period’s usage, in every read answer, documented', async () => {
    const run = `sdk-v1-sm-${Date.now()}`;
    const calls = await polar.meters.create({
      name: `Calls ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'count' },
    });
    const tokens = await polar.meters.create({
      name: `Tokens ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'sum', property: 'tokens' },
    });
    const product = await polar.products.create({
      name: `Usage plan ${run}`,
      recurring_interval: 'month',
      prices: [
        { amount_type: 'fixed', price_amount: 0 },
        { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: calls.id },
        { amount_type: 'metered_unit', unit_amount: '2', cap_amount: 30, meter_id: tokens.id },
      ],
    });
    const created = await polar.subscriptions.create({
      product_id: product.id,
      customer_id: stack.demo.customer_id,
    });
    expectDocumented('createSubscription', lastExchange().reply);
    // A write's answer carries the meters Get answers: none counted yet.
    expect(created.meters.map((m) => [m.meter_id, m.consumed_units, m.amount]).sort()).toEqual(
      [
        [calls.id, 0, 0],
        [tokens.id, 0, 0],
      ].sort(),
    );
    const events = [4, 9, 5].map((n, i) => ({
      name: run,
      customer_id: stack.demo.customer_id,
      external_id: `${run}-${i}`,
      metadata: { tokens: n },
    }));
    expect(await polar.events.ingest({ events })).toEqual({ inserted: 3, duplicates: 0 });
    let read: Awaited<ReturnType<typeof polar.subscriptions.get>> | undefined;
    await waitFor(
      async () => {
        read = await polar.subscriptions.get(created.id);
        // Each meter's customer meter is its own write of the aggregator: wait for both.
        const counted = (id: string) => read?.meters.find((m) => m.meter_id === id)?.consumed_units;
        return counted(tokens.id) === 18 && counted(calls.id) === 3;
      },
      60_000,
      'the subscription’s meters to count the three events',
    );
    expectDocumented('getSubscription', lastExchange().reply);
    const meters = new Map((read?.meters ?? []).map((m) => [m.meter_id, m]));
    expect(meters.get(calls.id)).toMatchObject({
      consumed_units: 3,
      credited_units: 0,
      amount: 2,
      meter: { id: calls.id },
    });
    // 18 tokens at 2 cents, capped at 30.
    expect(meters.get(tokens.id)).toMatchObject({ consumed_units: 18, amount: 30, meter: { id: tokens.id } });
    const listed = await polar.subscriptions.list({
      customer_id: stack.demo.customer_id,
      product_id: product.id,
    });
    expectDocumented('listSubscriptions', lastExchange().reply);
    expect(listed.items.map((s) => s.meters)).toEqual([read?.meters]);
    const session = asSession(stack.demo.customer_session_token);
    const portal = await polar.customerPortal.subscriptions.get(created.id, session);
    expectDocumented('getCustomerSubscription', lastExchange().reply);
    // The portal shows the meter's id, name and timestamps only.
    const portalView = (read?.meters ?? []).map(({ meter, ...usage }) => ({
      ...usage,
      meter: { created_at: meter.created_at, modified_at: meter.modified_at, id: meter.id, name: meter.name },
    }));
    expect(portal.meters).toEqual(portalView);
    const portalPage = await polar.customerPortal.subscriptions.list({ product_id: product.id }, session);
    expectDocumented('listCustomerSubscriptions', lastExchange().reply);
    expect(portalPage.items.map((s) => s.meters)).toEqual([portalView]);
  });
});
