/**
 * The official client, 0.49 line (`@polar-sh/sdk@0.49.0`, installed as
 * `polar-sdk-v0`), against the local API started as `npm start` starts it.
 * This client parses every success body, and every 404/422 body, with strict
 * zod schemas, so a call that resolves is a response shape it accepted.
 */
import { isDeepStrictEqual } from 'node:util';
import { Polar } from 'polar-sdk-v0';
import { oAuth2ClientConfigurationToJSON } from 'polar-sdk-v0/models/components/oauth2clientconfiguration.js';
import { AlreadyCanceledSubscription } from 'polar-sdk-v0/models/errors/alreadycanceledsubscription.js';
import { HTTPValidationError } from 'polar-sdk-v0/models/errors/httpvalidationerror.js';
import { ResourceNotFound } from 'polar-sdk-v0/models/errors/resourcenotfound.js';
import { ResponseValidationError } from 'polar-sdk-v0/models/errors/responsevalidationerror.js';
import { SDKError } from 'polar-sdk-v0/models/errors/sdkerror.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { WEBHOOK_SECRET_PLACEHOLDER } from '#shared/domain/secrets.ts';
import { expectDocumented } from '../support/contract.ts';
import { scopedToken, sharedLocalApi } from '../support/local-api.ts';
import { countsSettled } from '../support/subscription-counts.ts';
import { waitFor } from '../support/wait.ts';
import {
  expectBalanceTies,
  expectSorted,
  SORTING_CASES,
  type WalletLike,
  type WalletSorting,
} from '../support/wallet-order.ts';

let stack: ReturnType<typeof sharedLocalApi>;
let polar: Polar;
beforeAll(async () => {
  stack = sharedLocalApi();
  polar = new Polar({ accessToken: stack.demo.personal_access_token, serverURL: stack.demo.base_url });
});
afterAll(() => stack?.stop());

const withToken = (accessToken: string) => new Polar({ accessToken, serverURL: stack.demo.base_url });

/** Runs a call that must fail and returns what it threw. */
async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call resolved, a rejection was expected');
}

describe('Create Client (POST /v1/oauth2/register)', () => {
  // This client declares only 200 for createClient; our API answers 201 as RFC 7591 and the hosted
  // service do (docs/api.md, Create Client). The client therefore rejects the success with its fallback error.
  it('a confidential client: 201, which the client reports as an unexpected status', async () => {
    const error = await failure(() =>
      polar.oauth2.clients.create({
        clientName: 'sdk-v0 confidential',
        redirectUris: ['https://app.example/callback'],
        scope: 'openid profile subscriptions:write',
        clientUri: 'https://app.example',
        policyUri: null,
        defaultSubType: 'user',
      }),
    );
    expect(error).toBeInstanceOf(SDKError);
    const sdkError = error as SDKError;
    expect(sdkError.message).toMatch(/^Unexpected Status or Content-Type: Status 201/);
    expect(sdkError.statusCode).toBe(201);
    expect(sdkError.contentType).toMatch(/^application\/json/);
    const body = JSON.parse(sdkError.body) as Record<string, unknown>;
    expectDocumented('createClient', {
      status: sdkError.statusCode,
      headers: sdkError.headers,
      body,
      text: sdkError.body,
    });
    expect(body).toMatchObject({
      client_name: 'sdk-v0 confidential',
      redirect_uris: ['https://app.example/callback'],
      token_endpoint_auth_method: 'client_secret_post',
      scope: 'openid profile subscriptions:write',
      client_uri: 'https://app.example',
      default_sub_type: 'user',
      client_secret_expires_at: 0,
    });
    expect(body).not.toHaveProperty('policy_uri');
    expect(body.client_id).toMatch(/^polar_ci_/);
    expect(body.client_secret).toMatch(/^polar_cs_/);
    expect(sdkError.headers.get('cache-control')).toBe('no-store');
  });

  it('a public client: 201 without a secret', async () => {
    const error = (await failure(() =>
      polar.oauth2.clients.create({
        clientName: 'sdk-v0 public',
        redirectUris: ['http://127.0.0.1:8080/callback'],
        tokenEndpointAuthMethod: 'none',
        scope: 'openid',
      }),
    )) as SDKError;
    expect(error).toBeInstanceOf(SDKError);
    expect(error.statusCode).toBe(201);
    const body = JSON.parse(error.body) as Record<string, unknown>;
    expectDocumented('createClient', { status: 201, headers: error.headers, body, text: error.body });
    expect(body.token_endpoint_auth_method).toBe('none');
    expect(body).not.toHaveProperty('client_secret');
    expect(body).not.toHaveProperty('client_secret_expires_at');
  });

  it('the default scope this client fills in names two scopes outside the specification: 400', async () => {
    const error = (await failure(() =>
      polar.oauth2.clients.create({
        clientName: 'sdk-v0 default scope',
        redirectUris: ['https://a.example/cb'],
      }),
    )) as SDKError;
    expect(error).toBeInstanceOf(SDKError);
    expect(error.statusCode).toBe(400);
    // What the client sends when no scope is given, from its own serialiser.
    const sent = JSON.parse(
      oAuth2ClientConfigurationToJSON({ clientName: 'x', redirectUris: ['https://a.example/cb'] }),
    ) as { scope: string };
    const unknown = sent.scope.split(' ').filter((s) => !(ALL_SCOPES as readonly string[]).includes(s));
    expect(unknown.sort()).toEqual(['disputes:write', 'metrics:write']);
    expect(JSON.parse(error.body)).toMatchObject({ error: 'invalid_client_metadata' });
  });

  it('422 (a redirect URI without a scheme) → HTTPValidationError with the location', async () => {
    const error = await failure(() =>
      polar.oauth2.clients.create({ clientName: 'bad', redirectUris: ['foobar'], scope: 'openid' }),
    );
    expect(error).toBeInstanceOf(HTTPValidationError);
    const validation = error as HTTPValidationError;
    expect(validation.statusCode).toBe(422);
    expect(validation.detail?.[0]?.loc).toEqual(['body', 'redirect_uris', '0']);
  });
});

describe('Authorize: oauth2.authorize() sends no authorization request', () => {
  it('so the 0.49 client gets the RFC 6749 400 for the missing client_id, as an SDKError', async () => {
    const error = (await failure(() => polar.oauth2.authorize())) as SDKError;
    expect(error).toBeInstanceOf(SDKError);
    expect(error.statusCode).toBe(400);
    expect(JSON.parse(error.body)).toEqual({
      error: 'invalid_request',
      error_description: 'client_id is required.',
    });
  });
});

describe('Introspect and Revoke Token, UserInfo: oauth2.introspect(), oauth2.revoke(), oauth2.userinfo()', () => {
  const client = () => ({
    clientId: stack.demo.oauth_client.client_id,
    clientSecret: stack.demo.oauth_client.client_secret,
  });

  it('an active token: introspect parses every field; revoke answers {}; then the 0.49 client refuses {"active": false}', async () => {
    const token = stack.demo.oauth_tokens.access_token;
    const active = await polar.oauth2.introspect({ token, ...client() });
    expect(active).toMatchObject({
      active: true,
      clientId: stack.demo.oauth_client.client_id,
      tokenType: 'access_token',
      subType: 'organization',
      sub: stack.demo.organization_id,
      organizations: [stack.demo.organization_id],
      iss: stack.demo.base_url,
    });
    expect(await polar.oauth2.revoke({ token, tokenTypeHint: 'access_token', ...client() })).toEqual({});
    // RFC 7662 §2.2: an inactive token is `{"active": false}` alone; the 0.49 schema requires every
    // field of an active one, so the client rejects the (correct) answer.
    const inactive = await failure(() => polar.oauth2.introspect({ token, ...client() }));
    expect(inactive).toBeInstanceOf(ResponseValidationError);
    expect((inactive as ResponseValidationError).rawValue).toEqual({ active: false });
  });

  it('userinfo with the personal access token: the user, with the e-mail (the email scope)', async () => {
    const info = await polar.oauth2.userinfo();
    expect(info).toEqual({
      sub: expect.any(String),
      email: expect.stringContaining('@'),
      emailVerified: false,
    });
  });
});

describe('Request Token: oauth2.token()', () => {
  it('refresh_token grant (client_secret_post): accepted by the strict client, the refresh token rotated', async () => {
    const { client_id: clientId, client_secret: clientSecret } = stack.demo.oauth_client;
    const refreshed = await polar.oauth2.token({
      grantType: 'refresh_token',
      clientId,
      clientSecret,
      refreshToken: stack.demo.oauth_tokens.refresh_token,
    });
    expect(refreshed).toMatchObject({ tokenType: 'Bearer', expiresIn: 3600, scope: 'openid email' });
    expect(refreshed.refreshToken).toMatch(/^polar_rt_o_/);
    expect(refreshed.refreshToken).not.toBe(stack.demo.oauth_tokens.refresh_token);
    // The replaced refresh token again: a replay, refused (and its family revoked).
    const replay = (await failure(() =>
      polar.oauth2.token({
        grantType: 'refresh_token',
        clientId,
        clientSecret,
        refreshToken: stack.demo.oauth_tokens.refresh_token,
      }),
    )) as SDKError;
    expect(replay.statusCode).toBe(400);
    expect(JSON.parse(replay.body)).toMatchObject({ error: 'invalid_grant' });
  });

  it('authorization_code grant: the 0.49 client cannot send code_verifier, and PKCE is required of every client', async () => {
    const { client_id: clientId, client_secret: clientSecret } = stack.demo.oauth_client;
    const error = (await failure(() =>
      polar.oauth2.token({
        grantType: 'authorization_code',
        clientId,
        clientSecret,
        code: `polar_ac_${'A'.repeat(48)}`,
        redirectUri: 'http://127.0.0.1:8080/callback',
      }),
    )) as SDKError;
    expect(error).toBeInstanceOf(SDKError);
    expect(error.statusCode).toBe(400);
    expect(JSON.parse(error.body)).toEqual({
      error: 'invalid_request',
      error_description: 'code_verifier (PKCE is required) is required.',
    });
  });
});

describe('RFC 7592 through oauth2.clients.get / update / delete', () => {
  it('a client built with the registration access token reads, replaces and deletes its registration', async () => {
    // The 0.49 client reports Create Client's 201 as an error carrying the registration (see above).
    const created = (await failure(() =>
      polar.oauth2.clients.create({
        clientName: 'sdk-v0 rfc7592',
        redirectUris: ['https://app.example/callback'],
        scope: 'openid',
      }),
    )) as SDKError;
    const registration = JSON.parse(created.body) as { client_id: string; registration_access_token: string };
    const registrant = withToken(registration.registration_access_token);
    const read = await registrant.oauth2.clients.get({ clientId: registration.client_id });
    expect(read).toMatchObject({ client_id: registration.client_id, client_name: 'sdk-v0 rfc7592' });
    const updated = await registrant.oauth2.clients.update({
      clientId: registration.client_id,
      oAuth2ClientConfigurationUpdate: {
        clientId: registration.client_id,
        clientName: 'sdk-v0 rfc7592, renamed',
        redirectUris: ['https://app.example/callback'],
        scope: 'openid email',
      },
    });
    expect(updated).toMatchObject({ client_name: 'sdk-v0 rfc7592, renamed', scope: 'openid email' });
    await registrant.oauth2.clients.delete({ clientId: registration.client_id });
    const gone = await failure(() => registrant.oauth2.clients.get({ clientId: registration.client_id }));
    expect(gone).toBeInstanceOf(SDKError);
    expect((gone as SDKError).statusCode).toBe(401);
  });
});

describe('Create Subscription (POST /v1/subscriptions/)', () => {
  it('subscribes the demo customer to the free product; the client parses the Subscription', async () => {
    const subscription = await polar.subscriptions.create({
      productId: stack.demo.free_product_id,
      customerId: stack.demo.customer_id,
      metadata: { source: 'sdk-v0', seats: 3, ratio: 0.5, trial: false },
    });
    expect(subscription.status).toBe('active');
    expect(subscription.productId).toBe(stack.demo.free_product_id);
    expect(subscription.customerId).toBe(stack.demo.customer_id);
    expect(subscription.customer.id).toBe(stack.demo.customer_id);
    expect(subscription.product.id).toBe(stack.demo.free_product_id);
    expect(subscription.metadata).toEqual({ source: 'sdk-v0', seats: 3, ratio: 0.5, trial: false });
    expect(subscription.amount).toBe(0);
    expect(subscription.startedAt).toBeInstanceOf(Date);
    expect(subscription.currentPeriodEnd).toBeInstanceOf(Date);
    expect(subscription.currentPeriodEnd?.getTime()).toBeGreaterThan(
      subscription.currentPeriodStart.getTime(),
    );
    expect(subscription.prices.length).toBeGreaterThan(0);
  });

  it('a paid product → HTTPValidationError (PolarRequestValidationError)', async () => {
    const error = await failure(() =>
      polar.subscriptions.create({
        productId: stack.demo.paid_product_id,
        customerId: stack.demo.customer_id,
      }),
    );
    expect(error).toBeInstanceOf(HTTPValidationError);
    const validation = error as HTTPValidationError;
    expect(validation.statusCode).toBe(422);
    expect(validation.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'product_id'], type: 'value_error' }),
    ]);
  });

  it('a malformed product id → HTTPValidationError', async () => {
    const error = (await failure(() =>
      polar.subscriptions.create({ productId: 'not-a-uuid', customerId: stack.demo.customer_id }),
    )) as HTTPValidationError;
    expect(error).toBeInstanceOf(HTTPValidationError);
    expect(error.detail?.map((d) => d.loc)).toEqual([['body', 'product_id']]);
  });

  it('401 (unknown token) and 403 (no scope) → SDKError with the status', async () => {
    const unknown = (await failure(() =>
      withToken('polar_pat_unknownunknownunknownunknownunknown').subscriptions.create({
        productId: stack.demo.free_product_id,
        customerId: stack.demo.customer_id,
      }),
    )) as SDKError;
    expect(unknown).toBeInstanceOf(SDKError);
    expect(unknown.statusCode).toBe(401);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: 'invalid_token' });
    const forbidden = (await failure(() =>
      withToken(stack.demo.personal_access_token_without_scopes).subscriptions.create({
        productId: stack.demo.free_product_id,
        customerId: stack.demo.customer_id,
      }),
    )) as SDKError;
    expect(forbidden).toBeInstanceOf(SDKError);
    expect(forbidden.statusCode).toBe(403);
    expect(JSON.parse(forbidden.body)).toMatchObject({ error: 'insufficient_scope' });
  });
});

describe('List Wallets (GET /v1/customer-portal/wallets/)', () => {
  const session = () => ({ customerSession: stack.demo.customer_session_token });

  async function allPages(sorting: WalletSorting[] | undefined, limit: number, token?: string) {
    const pages = [];
    const iterator = await polar.customerPortal.wallets.list(
      { customerSession: token ?? stack.demo.customer_session_token },
      { limit, ...(sorting ? { sorting } : {}) },
    );
    for await (const page of iterator) pages.push(page.result);
    return pages;
  }

  it.for(SORTING_CASES)(
    'sorting=$label: one page of 100 and pages of 5 agree with the comparator',
    async ({ sorting }) => {
      const [whole] = await allPages(sorting, 100);
      expect(whole?.pagination).toEqual({ totalCount: 14, maxPage: 1 });
      const wallets = whole?.items ?? [];
      expect(wallets).toHaveLength(14);
      for (const wallet of wallets) {
        expect(wallet.customerId).toBe(stack.demo.customer_id);
        expect(wallet.createdAt).toBeInstanceOf(Date);
      }
      expectSorted(wallets, sorting);

      const paged = await allPages(sorting, 5);
      expect(paged.map((p) => p.items.length)).toEqual([5, 5, 4]);
      expect(paged.every((p) => p.pagination.maxPage === 3 && p.pagination.totalCount === 14)).toBe(true);
      expect(paged.flatMap((p) => p.items.map((w) => w.id))).toEqual(wallets.map((w) => w.id));
    },
  );

  it('the default order is -created_at; balances tie, so the id tie-break is exercised', async () => {
    const [page] = await allPages(undefined, 100);
    const wallets: WalletLike[] = page?.items ?? [];
    expectSorted(wallets, ['-created_at']);
    expectBalanceTies(wallets);
  });

  it('the large customer: limit 100 gives two pages, 100 then 20, sorted across the boundary', async () => {
    const pages = await allPages(['-balance'], 100, stack.demo.large_customer_session_token);
    expect(pages.map((p) => p.items.length)).toEqual([100, 20]);
    expect(pages[0]?.pagination).toEqual({ totalCount: 120, maxPage: 2 });
    expectSorted(
      pages.flatMap((p) => p.items),
      ['-balance'],
    );
  });

  it('a page past the end: no items, same pagination', async () => {
    const iterator = await polar.customerPortal.wallets.list(session(), { page: 9, limit: 5 });
    expect(iterator.result).toEqual({ items: [], pagination: { totalCount: 14, maxPage: 3 } });
  });

  it('limit 0 → HTTPValidationError at query.limit', async () => {
    const error = (await failure(() =>
      polar.customerPortal.wallets.list(session(), { limit: 0 }),
    )) as HTTPValidationError;
    expect(error).toBeInstanceOf(HTTPValidationError);
    expect(error.statusCode).toBe(422);
    expect(error.detail?.map((d) => d.loc)).toEqual([['query', 'limit']]);
  });

  it('an expired session → SDKError 401; a PAT on the portal → SDKError 401', async () => {
    const expired = (await failure(() =>
      polar.customerPortal.wallets.list({ customerSession: stack.demo.expired_customer_session_token }, {}),
    )) as SDKError;
    expect(expired).toBeInstanceOf(SDKError);
    expect(expired.statusCode).toBe(401);
    expect(expired.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const pat = (await failure(() =>
      polar.customerPortal.wallets.list({ customerSession: stack.demo.personal_access_token }, {}),
    )) as SDKError;
    expect(pat).toBeInstanceOf(SDKError);
    expect(pat.statusCode).toBe(401);
    expect(JSON.parse(pat.body)).toEqual({ error: 'Unauthorized', detail: 'Unauthorized' });
  });
});

describe('Delete Webhook Endpoint (DELETE /v1/webhooks/endpoints/{id})', () => {
  it('deletes (204, resolves to undefined); the second delete is ResourceNotFound', async () => {
    // Its own endpoint: the demo's are shared with the other e2e files (test/support/e2e-stack.ts).
    const { id } = await polar.webhooks.createWebhookEndpoint({
      url: 'https://hooks.example.com/sdk-v0-delete',
      format: 'raw',
      events: [],
    });
    await expect(polar.webhooks.deleteWebhookEndpoint({ id })).resolves.toBeUndefined();
    const error = await failure(() => polar.webhooks.deleteWebhookEndpoint({ id }));
    expect(error).toBeInstanceOf(ResourceNotFound);
    const notFound = error as ResourceNotFound;
    expect(notFound.statusCode).toBe(404);
    expect(notFound.error).toBe('ResourceNotFound');
    expect(notFound.detail).toBe('Not found');
  });

  it("another organization's endpoint → ResourceNotFound", async () => {
    const error = await failure(() =>
      polar.webhooks.deleteWebhookEndpoint({ id: stack.demo.other_organization.webhook_endpoint_id }),
    );
    expect(error).toBeInstanceOf(ResourceNotFound);
  });

  it('an id that is not a UUID4 → HTTPValidationError at path.id', async () => {
    const error = (await failure(() =>
      polar.webhooks.deleteWebhookEndpoint({ id: '00000000-0000-1000-8000-000000000000' }),
    )) as HTTPValidationError;
    expect(error).toBeInstanceOf(HTTPValidationError);
    expect(error.detail?.map((d) => d.loc)).toEqual([['path', 'id']]);
  });

  it('no webhooks:write scope → SDKError 403', async () => {
    const error = (await failure(() =>
      withToken(stack.demo.personal_access_token_without_scopes).webhooks.deleteWebhookEndpoint({
        id: stack.demo.webhook_endpoint_ids[0] as string,
      }),
    )) as SDKError;
    expect(error).toBeInstanceOf(SDKError);
    expect(error.statusCode).toBe(403);
  });
});

describe('Create Customer Session (POST /v1/customer-sessions/)', () => {
  it('by customer id: the client parses the 201 session, and its token lists the wallets', async () => {
    const session = await polar.customerSessions.create({
      customerId: stack.demo.customer_id,
      returnUrl: 'https://shop.example/account',
    });
    expect(session.customerId).toBe(stack.demo.customer_id);
    expect(session.token).toMatch(/^polar_cst_/);
    expect(session.expiresAt.getTime() - session.createdAt.getTime()).toBe(3_600_000);
    expect(session.customer.id).toBe(stack.demo.customer_id);
    const portal = new URL(session.customerPortalUrl);
    expect(portal.search).toBe('');
    expect(new URLSearchParams(portal.hash.slice(1)).get('customer_session_token')).toBe(session.token);
    const page = await polar.customerPortal.wallets.list({ customerSession: session.token }, {});
    expect(page.result.pagination.totalCount).toBe(14);
  });

  it('by external id', async () => {
    const session = await polar.customerSessions.create({
      externalCustomerId: stack.demo.customer_external_id,
    });
    expect(session.customerId).toBe(stack.demo.customer_id);
  });

  it("another organization's customer → HTTPValidationError at body.customer_id", async () => {
    const error = await failure(() =>
      polar.customerSessions.create({ customerId: stack.demo.other_organization.customer_id }),
    );
    expect(error).toBeInstanceOf(HTTPValidationError);
    expect((error as HTTPValidationError).detail?.[0]?.loc).toEqual(['body', 'customer_id']);
  });
});

describe('Get Wallet (GET /v1/customer-portal/wallets/{id})', () => {
  it('the client gets a wallet with the session token; another id is ResourceNotFound', async () => {
    const security = { customerSession: stack.demo.customer_session_token };
    const wallet = await polar.customerPortal.wallets.get(security, { id: stack.demo.wallet_id });
    expect(wallet).toMatchObject({
      id: stack.demo.wallet_id,
      customerId: stack.demo.customer_id,
      balance: 123_456,
    });
    const error = await failure(() =>
      polar.customerPortal.wallets.get(security, { id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' }),
    );
    expect(error).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Get Product and Get Subscription', () => {
  it('products.get and subscriptions.get parse the answers with their schemas', async () => {
    const product = await polar.products.get({ id: stack.demo.free_product_id });
    expect(product).toMatchObject({ id: stack.demo.free_product_id, isRecurring: true });
    const subscription = await polar.subscriptions.get({ id: stack.demo.subscription_id });
    expect(subscription).toMatchObject({
      id: stack.demo.subscription_id,
      productId: stack.demo.free_product_id,
    });
    const error = await failure(() =>
      polar.subscriptions.get({ id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' }),
    );
    expect(error).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Update and Revoke Subscription (PATCH, DELETE /v1/subscriptions/{id})', () => {
  it('subscriptions.update and subscriptions.revoke parse the answers; an ended one is AlreadyCanceledSubscription', async () => {
    const created = await polar.subscriptions.create({
      productId: stack.demo.free_product_id,
      customerId: stack.demo.customer_id,
    });
    const canceled = await polar.subscriptions.update({
      id: created.id,
      subscriptionUpdate: { cancelAtPeriodEnd: true, customerCancellationReason: 'too_complex' },
    });
    expect(canceled).toMatchObject({
      status: 'active',
      cancelAtPeriodEnd: true,
      customerCancellationReason: 'too_complex',
    });
    const revoked = await polar.subscriptions.revoke({ id: created.id });
    expect(revoked.status).toBe('canceled');
    expect(revoked.endedAt).toBeInstanceOf(Date);
    const error = await failure(() => polar.subscriptions.revoke({ id: created.id }));
    expect(error).toBeInstanceOf(AlreadyCanceledSubscription);
  });
});

describe('Create and Get Customer (POST /v1/customers/, GET /v1/customers/{id})', () => {
  it('customers.create and customers.get parse the answers', async () => {
    const email = `sdk-v0-${Date.now()}@example.com`;
    const created = await polar.customers.create({ email, name: 'SDK v0', externalId: `v0-${email}` });
    expect(created).toMatchObject({ email, name: 'SDK v0', externalId: `v0-${email}` });
    const read = await polar.customers.get({ id: created.id });
    expect(read.id).toBe(created.id);
  });
});

describe('List, Get by external id, Update and Delete Customer', () => {
  it('customers.list pages through its PageIterator in the order of one large page', async () => {
    // The e2e files share one stack and run two at a time: the lists are scoped to this test's
    // customers (a name prefix of its own), or a customer another file creates meanwhile shows up.
    const tag = `V0 list ${Date.now()}`;
    for (let i = 0; i < 4; i++) {
      await polar.customers.create({
        email: `sdk-v0-list-${i}-${Date.now()}@example.com`,
        name: `${tag} ${i}`,
      });
    }
    const pagesOf = async (limit: number) => {
      const items: { id: string }[] = [];
      for await (const page of await polar.customers.list({
        limit,
        sorting: ['name', '-created_at'],
        query: tag,
      })) {
        items.push(...page.result.items);
      }
      return items.map((c) => c.id);
    };
    const whole = await pagesOf(100);
    expect(whole).toHaveLength(4);
    expect(await pagesOf(3)).toEqual(whole);
    const found = [];
    for await (const page of await polar.customers.list({ query: tag.toUpperCase() }))
      found.push(...page.result.items);
    expect(found).toHaveLength(4);
  });

  it('getExternal, update and updateExternal parse the answers; delete and deleteExternal resolve on the 204', async () => {
    const externalId = `sdk v0/${Date.now()}`;
    const created = await polar.customers.create({
      email: `sdk-v0-ext-${Date.now()}@example.com`,
      externalId,
    });
    expect((await polar.customers.getExternal({ externalId })).id).toBe(created.id);
    const updated = await polar.customers.update({
      id: created.id,
      customerUpdate: { name: 'V0 renamed', billingAddress: { country: 'DE' } },
    });
    expect(updated).toMatchObject({ name: 'V0 renamed', billingAddress: { country: 'DE', city: null } });
    const viaExternal = await polar.customers.updateExternal({
      externalId,
      customerUpdateExternalID: { metadata: { plan: 'v0' } },
    });
    expect(viaExternal.metadata).toEqual({ plan: 'v0' });
    const reset = await failure(() =>
      polar.customers.update({ id: created.id, customerUpdate: { billingAddress: null } }),
    );
    expect(reset).toBeInstanceOf(HTTPValidationError);
    expect((reset as HTTPValidationError).detail?.[0]?.msg).toBe(
      'Customer billing address cannot be reset to null once set.',
    );
    // This client always sends anonymize (false unless asked).
    await polar.customers.deleteExternal({ externalId });
    expect(await failure(() => polar.customers.getExternal({ externalId }))).toBeInstanceOf(ResourceNotFound);
    const other = await polar.customers.create({ email: `sdk-v0-del-${Date.now()}@example.com` });
    await polar.customers.delete({ id: other.id, anonymize: true });
    expect(await failure(() => polar.customers.delete({ id: other.id }))).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Create, List and Update Product (POST, GET /v1/products/, PATCH /v1/products/{id})', () => {
  it('products.create and products.update parse the answers with their schemas', async () => {
    const created = await polar.products.create({
      name: 'SDK v0 plan',
      recurringInterval: 'month',
      prices: [{ amountType: 'fixed', priceAmount: 0 }],
      metadata: { source: 'sdk-v0' },
    });
    expect(created).toMatchObject({
      name: 'SDK v0 plan',
      isRecurring: true,
      organizationId: stack.demo.organization_id,
      metadata: { source: 'sdk-v0' },
    });
    expect(created.prices[0]).toMatchObject({ amountType: 'fixed', priceAmount: 0, priceCurrency: 'usd' });
    expect(created.createdAt).toBeInstanceOf(Date);
    const updated = await polar.products.update({
      id: created.id,
      productUpdate: {
        description: 'updated by 0.49',
        isArchived: true,
        prices: [{ id: created.prices[0]?.id ?? '' }],
      },
    });
    expect(updated).toMatchObject({ description: 'updated by 0.49', isArchived: true });
    expect(updated.modifiedAt).toBeInstanceOf(Date);
    expect(updated.prices.map((p) => p.id)).toEqual([created.prices[0]?.id]);
  });

  it('products.list: its page iterator walks a filtered, sorted list, each page parsed', async () => {
    for (const name of ['sdk-v0 list a', 'sdk-v0 list b', 'sdk-v0 list c']) {
      await polar.products.create({
        name,
        prices: [{ amountType: 'fixed', priceAmount: 100, priceCurrency: 'usd' }],
      });
    }
    const pages = [];
    for await (const page of await polar.products.list({
      query: 'SDK-V0 LIST',
      sorting: ['-name'],
      limit: 2,
    })) {
      pages.push(page.result);
    }
    expect(pages.map((page) => page.items.map((p) => p.name))).toEqual([
      ['sdk-v0 list c', 'sdk-v0 list b'],
      ['sdk-v0 list a'],
    ]);
    expect(pages.every((page) => page.pagination.totalCount === 3 && page.pagination.maxPage === 2)).toBe(
      true,
    );
    const refused = await failure(() =>
      polar.products.list({ isArchived: true, sorting: ['name'], visibility: ['public'] }),
    );
    expect(refused).toBeInstanceOf(HTTPValidationError);
  });
});

describe('Webhook endpoints (POST, GET /v1/webhooks/endpoints, GET, PATCH /{id}, PATCH /{id}/secret)', () => {
  it('webhooks.createWebhookEndpoint, getWebhookEndpoint, updateWebhookEndpoint, resetWebhookEndpointSecret parse the answers', async () => {
    const created = await polar.webhooks.createWebhookEndpoint({
      url: 'https://hooks.example.com/sdk-v0',
      name: 'SDK v0',
      format: 'slack',
      events: ['subscription.created'],
    });
    expect(created).toMatchObject({
      url: 'https://hooks.example.com/sdk-v0',
      format: 'slack',
      enabled: true,
    });
    expect(created.createdAt).toBeInstanceOf(Date);
    expect(created.secret).toMatch(/^whsec_/);
    // The strict schema keeps its own fields and drops ours (api_version, disabled_reason, …).
    expect(created).not.toHaveProperty('failure_count');

    const read = await polar.webhooks.getWebhookEndpoint({ id: created.id });
    expect(read.secret).toBe(created.secret);

    const updated = await polar.webhooks.updateWebhookEndpoint({
      id: created.id,
      webhookEndpointUpdate: { name: 'SDK v0, renamed', format: 'discord' },
    });
    expect(updated).toMatchObject({ name: 'SDK v0, renamed', format: 'discord' });

    const reset = await polar.webhooks.resetWebhookEndpointSecret({ id: created.id });
    expect(reset.secret).toMatch(/^whsec_/);
    expect(reset.secret).not.toBe(created.secret);
  });

  it('listWebhookEndpoints: the page iterator walks every page', async () => {
    const iterator = await polar.webhooks.listWebhookEndpoints({ limit: 2 });
    const ids: string[] = [];
    let total = -1;
    for await (const page of iterator) {
      total = page.result.pagination.totalCount;
      ids.push(...page.result.items.map((endpoint) => endpoint.id));
    }
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
  });

  it('an unknown endpoint is ResourceNotFound; a refused URL HTTPValidationError', async () => {
    const missing = await failure(() => polar.webhooks.getWebhookEndpoint({ id: crypto.randomUUID() }));
    expect(missing).toBeInstanceOf(ResourceNotFound);
    const refused = await failure(() =>
      polar.webhooks.createWebhookEndpoint({ url: 'https://10.0.0.1/', format: 'raw', events: [] }),
    );
    expect(refused).toBeInstanceOf(HTTPValidationError);
  });
});

describe('Webhook endpoints with a webhooks:write and a webhooks:read credential', () => {
  it('the writer: every call parses, with the real secret; the reader: Get and List parse with the placeholder, the writes are SDKError 403', async () => {
    const writer = withToken(await scopedToken(stack, 'webhooks:write'));
    const reader = withToken(await scopedToken(stack, 'webhooks:read'));
    const created = await writer.webhooks.createWebhookEndpoint({
      url: 'https://hooks.example.com/sdk-v0-scoped',
      format: 'raw',
      events: ['customer.created'],
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await writer.webhooks.getWebhookEndpoint({ id: created.id })).secret).toBe(created.secret);
    const renamed = await writer.webhooks.updateWebhookEndpoint({
      id: created.id,
      webhookEndpointUpdate: { name: 'scoped' },
    });
    expect(renamed.secret).toBe(created.secret);
    const reset = await writer.webhooks.resetWebhookEndpointSecret({ id: created.id });
    expect(reset.secret).not.toBe(created.secret);
    const writerSecrets: string[] = [];
    for await (const page of await writer.webhooks.listWebhookEndpoints({ limit: 100 })) {
      writerSecrets.push(...page.result.items.map((endpoint) => endpoint.secret));
    }
    expect(writerSecrets).toContain(reset.secret);

    const read = await reader.webhooks.getWebhookEndpoint({ id: created.id });
    expect(read).toMatchObject({ id: created.id, name: 'scoped', secret: WEBHOOK_SECRET_PLACEHOLDER });
    const readerSecrets: string[] = [];
    for await (const page of await reader.webhooks.listWebhookEndpoints({ limit: 100 })) {
      readerSecrets.push(...page.result.items.map((endpoint) => endpoint.secret));
    }
    expect(readerSecrets.length).toBeGreaterThan(0);
    expect(new Set(readerSecrets)).toEqual(new Set([WEBHOOK_SECRET_PLACEHOLDER]));
    const writes = [
      () =>
        reader.webhooks.createWebhookEndpoint({
          url: 'https://hooks.example.com/r',
          format: 'raw',
          events: [],
        }),
      () => reader.webhooks.updateWebhookEndpoint({ id: created.id, webhookEndpointUpdate: { name: 'r' } }),
      () => reader.webhooks.resetWebhookEndpointSecret({ id: created.id }),
      () => reader.webhooks.deleteWebhookEndpoint({ id: created.id }),
    ];
    for (const write of writes) {
      const error = (await failure(write)) as SDKError;
      expect(error).toBeInstanceOf(SDKError);
      expect(error.statusCode).toBe(403);
    }
    await expect(writer.webhooks.deleteWebhookEndpoint({ id: created.id })).resolves.toBeUndefined();
  });
});

describe('List Subscriptions (GET /v1/subscriptions/)', () => {
  it('subscriptions.list pages through its iterator; every page parses', async () => {
    const customer = await polar.customers.create({ email: `sdk-v0-list-${Date.now()}@example.com` });
    const created = [];
    for (let i = 0; i < 5; i++) {
      created.push(
        await polar.subscriptions.create({ productId: stack.demo.free_product_id, customerId: customer.id }),
      );
    }
    // The iterator stops at `maxPage`, from the total: walked once the stream's projection counted the
    // five signups and then the revoke (the counts lag the writes: docs/data-model.md, "Subscription
    // counts"; until the revoke is counted, its entry read in its new segment counts it twice).
    const total = async (active?: boolean) =>
      (await polar.subscriptions.list({ customerId: customer.id, limit: 1, ...(active ? { active } : {}) }))
        .result.pagination.totalCount;
    await countsSettled(() => total(), 5, "the customer's subscriptions counted");
    await polar.subscriptions.update({ id: created[0]?.id as string, subscriptionUpdate: { revoke: true } });
    await countsSettled(() => total(true), 4, "the customer's revoke counted");
    const pages = [];
    const iterator = await polar.subscriptions.list({
      customerId: customer.id,
      limit: 2,
      sorting: ['-started_at'],
    });
    for await (const page of iterator) pages.push(page.result);
    expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
    expect(pages.every((p) => p.pagination.totalCount === 5 && p.pagination.maxPage === 3)).toBe(true);
    const ids = pages.flatMap((p) => p.items.map((s) => s.id));
    expect(ids).toEqual(created.map((s) => s.id).reverse());
    for (const subscription of pages.flatMap((p) => p.items)) {
      expect(subscription.customer.id).toBe(customer.id);
      expect(subscription.startedAt).toBeInstanceOf(Date);
    }
    const active = await polar.subscriptions.list({ customerId: customer.id, active: true, limit: 100 });
    expect(active.result.items.map((s) => s.status)).toEqual(['active', 'active', 'active', 'active']);
  });
});

describe('Customer portal subscriptions (/v1/customer-portal/subscriptions/)', () => {
  it('list (page iterator), get, cancel, update parse with the strict schemas; the errors', async () => {
    const customer = await polar.customers.create({ email: `sdk-v0-portal-${Date.now()}@example.com` });
    const session = await polar.customerSessions.create({ customerId: customer.id });
    const security = { customerSession: session.token };
    const created = [];
    for (let i = 0; i < 3; i++) {
      created.push(
        await polar.subscriptions.create({ productId: stack.demo.free_product_id, customerId: customer.id }),
      );
    }
    await countsSettled(
      async () =>
        (await polar.customerPortal.subscriptions.list(security, { limit: 1 })).result.pagination.totalCount,
      3,
      "the portal customer's subscriptions counted",
    );
    const pages = [];
    const iterator = await polar.customerPortal.subscriptions.list(security, {
      limit: 2,
      sorting: ['started_at'],
    });
    for await (const page of iterator) pages.push(page.result);
    expect(pages.map((p) => p.items.length)).toEqual([2, 1]);
    expect(pages.flatMap((p) => p.items.map((s) => s.id))).toEqual(created.map((s) => s.id));
    const [first] = pages[0]?.items ?? [];
    expect(first?.product.organization.id).toBe(stack.demo.organization_id);
    expect(first?.startedAt).toBeInstanceOf(Date);
    const target = created[0]?.id as string;
    const read = await polar.customerPortal.subscriptions.get(security, { id: target });
    expect(read.id).toBe(target);
    const canceled = await polar.customerPortal.subscriptions.cancel(security, { id: target });
    expect(canceled).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
    const again = await failure(() => polar.customerPortal.subscriptions.cancel(security, { id: target }));
    expect(again).toBeInstanceOf(AlreadyCanceledSubscription);
    const back = await polar.customerPortal.subscriptions.update(security, {
      id: target,
      customerSubscriptionUpdate: { cancelAtPeriodEnd: false },
    });
    expect(back).toMatchObject({ cancelAtPeriodEnd: false, canceledAt: null });
    // 0.49 predates the hosted service's 409 for an uncancel of one not set to cancel: SDKError.
    const notScheduled = (await failure(() =>
      polar.customerPortal.subscriptions.update(security, {
        id: target,
        customerSubscriptionUpdate: { cancelAtPeriodEnd: false },
      }),
    )) as SDKError;
    expect(notScheduled).toBeInstanceOf(SDKError);
    expect(notScheduled.statusCode).toBe(409);
    expect(JSON.parse(notScheduled.body)).toMatchObject({ error: 'SubscriptionNotScheduledToCancel' });
    const foreign = await failure(() =>
      polar.customerPortal.subscriptions.get(security, { id: stack.demo.subscription_id }),
    );
    expect(foreign).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Webhook deliveries (GET /v1/webhooks/deliveries, POST /v1/webhooks/events/{id}/redeliver)', () => {
  it('listWebhookDeliveries: the page iterator walks every page; the strict schemas accept each attempt', async () => {
    const endpointId = stack.demo.webhook_endpoint_ids[1] as string;
    // Newest first, while the other files' deliveries to this endpoint keep arriving: a walk during
    // which one landed sees the list shift by a page, so the walk is repeated until one saw it still
    // (waited on that state with a deadline; each walk checks every attempt against the schemas).
    let walked: { eventIds: string[]; total: number } = { eventIds: [], total: -1 };
    const walk = async () => {
      const iterator = await polar.webhooks.listWebhookDeliveries({ endpointId, limit: 1 });
      const eventIds: string[] = [];
      let total = -1;
      for await (const page of iterator) {
        total = page.result.pagination.totalCount;
        for (const delivery of page.result.items) {
          expect(delivery.createdAt).toBeInstanceOf(Date);
          expect(typeof delivery.succeeded).toBe('boolean');
          eventIds.push(delivery.webhookEvent.id);
        }
      }
      walked = { eventIds, total };
      return total > 0 && eventIds.length === total && eventIds.includes(stack.demo.webhook_event_id);
    };
    await waitFor(walk, 60_000, 'a page walk over a list that did not move under it').catch(() => {});
    expect(walked.total).toBeGreaterThan(0);
    expect(walked.eventIds).toHaveLength(walked.total);
    expect(walked.eventIds).toContain(stack.demo.webhook_event_id);
  });

  it('redeliverWebhookEvent resolves (202, null); an unknown event is ResourceNotFound', async () => {
    await expect(
      polar.webhooks.redeliverWebhookEvent({ id: stack.demo.webhook_event_id }),
    ).resolves.toBeNull();
    const missing = await failure(() => polar.webhooks.redeliverWebhookEvent({ id: crypto.randomUUID() }));
    expect(missing).toBeInstanceOf(ResourceNotFound);
  });

  it('a filter no key answers (http_code_class) is HTTPValidationError', async () => {
    const refused = await failure(async () => {
      for await (const _ of await polar.webhooks.listWebhookDeliveries({ httpCodeClass: '5xx' })) {
        // the first page already fails
      }
    });
    expect(refused).toBeInstanceOf(HTTPValidationError);
  });
});

describe('Meters (POST, GET /v1/meters/, GET, PATCH /v1/meters/{id}) and a metered price', () => {
  it('meters.create, get, list and update parse the answers with their schemas; a metered price too', async () => {
    const created = await polar.meters.create({
      name: 'SDK v0 tokens',
      filter: {
        conjunction: 'and',
        clauses: [
          { property: 'name', operator: 'eq', value: 'llm.call' },
          { conjunction: 'or', clauses: [{ property: 'metadata.tier', operator: 'ne', value: 3 }] },
        ],
      },
      aggregation: { func: 'unique', property: 'metadata.user' },
      unit: 'custom',
      customLabel: 'user',
    });
    expect(created).toMatchObject({
      name: 'SDK v0 tokens',
      unit: 'custom',
      customLabel: 'user',
      organizationId: stack.demo.organization_id,
      aggregation: { func: 'unique', property: 'user' },
    });
    expect(created.createdAt).toBeInstanceOf(Date);
    const got = await polar.meters.get({ id: created.id });
    expect(got.id).toBe(created.id);
    const pages = [];
    for await (const page of await polar.meters.list({
      query: 'SDK v0',
      sorting: ['-created_at'],
      limit: 1,
    })) {
      pages.push(page.result);
    }
    expect(pages.flatMap((page) => page.items.map((m) => m.id))).toContain(created.id);
    const updated = await polar.meters.update({
      id: created.id,
      meterUpdate: { isArchived: true, aggregation: { func: 'max', property: 'latency' } },
    });
    expect(updated.archivedAt).toBeInstanceOf(Date);
    expect(updated.aggregation).toMatchObject({ func: 'max', property: 'latency' });
    expect(
      await failure(() => polar.meters.get({ id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' })),
    ).toBeInstanceOf(ResourceNotFound);

    const live = await polar.meters.create({
      name: 'SDK v0 calls',
      filter: { conjunction: 'and', clauses: [] },
      aggregation: { func: 'count' },
    });
    const product = await polar.products.create({
      name: 'SDK v0 usage plan',
      recurringInterval: 'month',
      prices: [
        { amountType: 'fixed', priceAmount: 0 },
        { amountType: 'metered_unit', unitAmount: '1.5', meterId: live.id },
      ],
    });
    expect(product.prices[1]).toMatchObject({
      amountType: 'metered_unit',
      unitAmount: '1.5',
      capAmount: null,
      meterId: live.id,
      meter: { id: live.id, name: 'SDK v0 calls' },
    });
  });
});

describe('Events: events.ingest, events.list, events.get, events.listNames', () => {
  it('every answer passes the client schemas (Event, EventName, EventsIngestResponse)', async () => {
    const run = `sdk-v0-${Date.now()}`;
    const ingested = await polar.events.ingest({
      events: [
        {
          name: `${run}-call`,
          customerId: stack.demo.customer_id,
          externalId: `${run}-1`,
          timestamp: new Date(Date.now() - 60_000),
          metadata: {
            tokens: 7,
            _llm: { vendor: 'openai', model: 'small', inputTokens: 3, outputTokens: 4, totalTokens: 7 },
          },
        },
        { name: `${run}-call`, externalCustomerId: `${run}-ext`, externalId: `${run}-2` },
      ],
    });
    expect(ingested).toEqual({ inserted: 2, duplicates: 0 });
    const page = await polar.events.list({
      startTimestamp: new Date(Date.now() - 3_600_000),
      name: `${run}-call`,
    });
    expect(page.pagination).toMatchObject({ totalCount: 2 });
    const [, byCustomer] = page.items;
    expect(byCustomer).toMatchObject({
      customerId: stack.demo.customer_id,
      source: 'user',
      name: `${run}-call`,
    });
    const read = await polar.events.get({ id: byCustomer?.id as string });
    expect(read).toMatchObject({ id: byCustomer?.id, customer: { id: stack.demo.customer_id } });
    const names = await polar.events.listNames({ query: run });
    expect(names.result.items).toEqual([expect.objectContaining({ name: `${run}-call`, occurrences: 2 })]);
    expect(
      await failure(() => polar.events.get({ id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' })),
    ).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Customer meters: customerMeters.list, customerMeters.get', () => {
  it('every answer passes the client schemas (CustomerMeter, with its Customer and Meter)', async () => {
    const run = `sdk-v0-cm-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `SDK v0 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'unique', property: 'metadata.user' },
    });
    const ingested = await polar.events.ingest({
      events: ['ada', 'bob', 'ada'].map((user, i) => ({
        name: run,
        customerId: stack.demo.customer_id,
        externalId: `${run}-${i}`,
        metadata: { user },
      })),
    });
    expect(ingested).toEqual({ inserted: 3, duplicates: 0 });
    let items: { id: string; consumedUnits: number }[] = [];
    await waitFor(
      async () => {
        const pages = await polar.customerMeters.list({
          customerId: stack.demo.customer_id,
          meterId: meter.id,
        });
        items = pages.result.items;
        return items[0]?.consumedUnits === 2;
      },
      15_000,
      'the customer meter to count two distinct users',
    );
    const [item] = items;
    const read = await polar.customerMeters.get({ id: item?.id as string });
    expect(read).toMatchObject({
      customerId: stack.demo.customer_id,
      meterId: meter.id,
      consumedUnits: 2,
      creditedUnits: 0,
      balance: -2,
      meter: { id: meter.id },
    });
    expect(read.createdAt).toBeInstanceOf(Date);
    expect(
      await failure(() => polar.customerMeters.get({ id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' })),
    ).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Meter quantities: meters.quantities', () => {
  it('every answer passes the client schemas (MeterQuantities, its timestamps as dates)', async () => {
    const run = `sdk-v0-q-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `SDK v0 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'count' },
    });
    const ingested = await polar.events.ingest({
      events: [0, 1].map((i) => ({
        name: run,
        customerId: stack.demo.customer_id,
        externalId: `${run}-${i}`,
      })),
    });
    expect(ingested).toEqual({ inserted: 2, duplicates: 0 });
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const window = {
      id: meter.id,
      startTimestamp: new Date(hour - 3_600_000),
      endTimestamp: new Date(hour + 3_600_000),
    };
    let total = 0;
    await waitFor(
      async () => {
        total = (await polar.meters.quantities({ ...window, interval: 'hour' })).total;
        return total === 2;
      },
      15_000,
      'the quantities to count the two events',
    );
    // From the day before: a window's buckets start at each `start + k days`, so the two hours around
    // midnight would hold only the day before it, not the events' (run at 00:00-01:00 UTC, this
    // answered 0).
    const byDay = await polar.meters.quantities({
      ...window,
      startTimestamp: new Date(hour - 86_400_000),
      interval: 'day',
      customerId: stack.demo.customer_id,
      customerAggregationFunction: 'sum',
    });
    expect(byDay.total).toBe(2);
    expect(byDay.quantities[0]?.timestamp).toBeInstanceOf(Date);
    expect(
      await failure(() =>
        polar.meters.quantities({ ...window, id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b', interval: 'day' }),
      ),
    ).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Customer portal meters: customerPortal.customerMeters.list, customerPortal.customerMeters.get', () => {
  it('every answer passes the client schemas (CustomerCustomerMeter, with its meter summary)', async () => {
    const run = `sdk-v0-pm-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `Portal v0 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'sum', property: 'tokens' },
    });
    const ingested = await polar.events.ingest({
      events: [3, 4].map((tokens, i) => ({
        name: run,
        customerId: stack.demo.customer_id,
        externalId: `${run}-${i}`,
        metadata: { tokens },
      })),
    });
    expect(ingested).toEqual({ inserted: 2, duplicates: 0 });
    const security = { customerSession: stack.demo.customer_session_token };
    let items: { id: string; consumedUnits: number }[] = [];
    await waitFor(
      async () => {
        const pages = await polar.customerPortal.customerMeters.list(security, { meterId: meter.id });
        items = pages.result.items;
        return items[0]?.consumedUnits === 7;
      },
      15_000,
      'the customer meter to sum the two events',
    );
    const [item] = items;
    const read = await polar.customerPortal.customerMeters.get(security, { id: item?.id as string });
    expect(read).toEqual(item);
    expect(read).toMatchObject({
      customerId: stack.demo.customer_id,
      meterId: meter.id,
      consumedUnits: 7,
      creditedUnits: 0,
      balance: -7,
      modifiedAt: null,
      meter: { id: meter.id, name: meter.name },
    });
    expect(read.createdAt).toBeInstanceOf(Date);
    expect(read.meter.createdAt).toBeInstanceOf(Date);
    const byName = await polar.customerPortal.customerMeters.list(security, { query: `PORTAL V0 ${run}` });
    expect(byName.result.items.map((i) => i.id)).toEqual([item?.id]);
    expect(
      await failure(() =>
        polar.customerPortal.customerMeters.get(security, { id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' }),
      ),
    ).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Customer state: customers.getState, customers.getStateExternal', () => {
  it('every answer passes the client schemas (CustomerState: its subscriptions, benefits and meters)', async () => {
    const run = `sdk-v0-state-${Date.now()}`;
    const customer = await polar.customers.create({ email: `${run}@example.com`, externalId: run });
    const subscription = await polar.subscriptions.create({
      productId: stack.demo.free_product_id,
      customerId: customer.id,
    });
    const meter = await polar.meters.create({
      name: `SDK v0 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'sum', property: 'tokens' },
    });
    await polar.events.ingest({
      events: [1.5, 2].map((tokens, i) => ({
        name: run,
        customerId: customer.id,
        externalId: `${run}-${i}`,
        metadata: { tokens },
      })),
    });
    let state: Awaited<ReturnType<typeof polar.customers.getState>> | undefined;
    let external: typeof state;
    // Settled once both routes agree: the aggregator writes each meter's customer meter on its own,
    // so a read in the middle of its batch may miss another suite's catch-all meter counting these.
    await waitFor(
      async () => {
        state = await polar.customers.getState({ id: customer.id });
        external = await polar.customers.getStateExternal({ externalId: run });
        return (
          state.activeMeters.some((m) => m.meterId === meter.id && m.consumedUnits === 3.5) &&
          isDeepStrictEqual(state, external)
        );
      },
      15_000,
      'the customer state to sum the two events',
    );
    expect(state).toMatchObject({
      id: customer.id,
      externalId: run,
      activeSubscriptions: [{ id: subscription.id, status: 'active', meters: [] }],
      grantedBenefits: [],
    });
    expect(state?.activeSubscriptions[0]?.currentPeriodEnd).toBeInstanceOf(Date);
    expect(state?.activeMeters.find((m) => m.meterId === meter.id)).toMatchObject({
      consumedUnits: 3.5,
      creditedUnits: 0,
      balance: -3.5,
      modifiedAt: null,
    });
    expect(external).toEqual(state);
    expect(
      await failure(() => polar.customers.getState({ id: '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b' })),
    ).toBeInstanceOf(ResourceNotFound);
    expect(
      await failure(() => polar.customers.getStateExternal({ externalId: `${run}-unknown` })),
    ).toBeInstanceOf(ResourceNotFound);
  });
});

describe('Subscription meters: subscriptions.get / list, customerPortal.subscriptions.get / list', () => {
  it('the filled meters pass the client schemas (SubscriptionMeter, with its Meter)', async () => {
    const run = `sdk-v0-sm-${Date.now()}`;
    const meter = await polar.meters.create({
      name: `SDK v0 ${run}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: run }] },
      aggregation: { func: 'count' },
    });
    const product = await polar.products.create({
      name: `SDK v0 usage ${run}`,
      recurringInterval: 'month',
      prices: [
        { amountType: 'fixed', priceAmount: 0 },
        { amountType: 'metered_unit', unitAmount: '0.5', meterId: meter.id },
      ],
    });
    const created = await polar.subscriptions.create({
      productId: product.id,
      customerId: stack.demo.customer_id,
    });
    // A write's answer carries the meters Get answers: none counted yet.
    expect(created.meters).toMatchObject([{ meterId: meter.id, consumedUnits: 0, amount: 0 }]);
    const ingested = await polar.events.ingest({
      events: [0, 1, 2].map((i) => ({
        name: run,
        customerId: stack.demo.customer_id,
        externalId: `${run}-${i}`,
      })),
    });
    expect(ingested).toEqual({ inserted: 3, duplicates: 0 });
    let read: Awaited<ReturnType<typeof polar.subscriptions.get>> | undefined;
    await waitFor(
      async () => {
        read = await polar.subscriptions.get({ id: created.id });
        return read.meters[0]?.consumedUnits === 3;
      },
      15_000,
      'the subscription’s meter to count the three events',
    );
    expect(read?.meters).toMatchObject([
      {
        meterId: meter.id,
        consumedUnits: 3,
        creditedUnits: 0,
        amount: 2,
        modifiedAt: null,
        meter: { id: meter.id },
      },
    ]);
    expect(read?.meters[0]?.createdAt).toBeInstanceOf(Date);
    const pages = await polar.subscriptions.list({
      customerId: stack.demo.customer_id,
      productId: product.id,
    });
    expect(pages.result.items.map((s) => s.meters)).toEqual([read?.meters]);
    const security = { customerSession: stack.demo.customer_session_token };
    const portal = await polar.customerPortal.subscriptions.get(security, { id: created.id });
    // The portal's schema: the meter's id, name and timestamps only.
    const portalView = (read?.meters ?? []).map(({ meter, ...usage }) => ({
      ...usage,
      meter: { createdAt: meter.createdAt, modifiedAt: meter.modifiedAt, id: meter.id, name: meter.name },
    }));
    expect(portal.meters).toEqual(portalView);
    const portalPages = await polar.customerPortal.subscriptions.list(security, { productId: product.id });
    expect(portalPages.result.items.map((s) => s.meters)).toEqual([portalView]);
  });
});
