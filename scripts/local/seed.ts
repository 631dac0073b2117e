/**
 * The demo data set of `npm start` (see docs/local.md), built with
 * the operator commands. Returns what `.local/demo.json` holds.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  type AdminContext,
  addMember,
  createCustomer,
  createCustomerSession,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
  createWallet,
  createWebhookEndpoint,
  recordDeliveredWebhookEvent,
} from '#scripts/admin/commands.ts';
import { findOAuthClient } from '#shared/data/oauth-clients.ts';
import type { CustomerRecord, WalletType } from '#shared/data/records.ts';
import { localIdTokenKeys } from '#shared/domain/id-token.ts';
import type { ClientPrincipal, RegisteredClient, UserPrincipal } from '#shared/domain/principals.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import type { OAuth2ClientRegistration } from '#shared/generated/api-types.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { consent } from '#shared/services/consent.ts';
import { createClient } from '#shared/services/create-client.ts';
import { createSubscription } from '#shared/services/create-subscription.ts';
import { requestToken } from '#shared/services/request-token.ts';

export interface DemoData {
  base_url: string;
  organization_id: string;
  personal_access_token: string;
  personal_access_token_without_scopes: string;
  customer_id: string;
  /** The demo customer's external id (Create Customer Session by `external_customer_id`). */
  customer_external_id: string;
  /** The demo customer's wallet with the highest balance (Get Wallet). */
  wallet_id: string;
  /** A subscription of the large customer to the free plan (Get Subscription). */
  subscription_id: string;
  /** A subscription of the demo customer to the free plan, for its customer session (the portal). */
  customer_subscription_id: string;
  customer_session_token: string;
  expired_customer_session_token: string;
  second_customer_id: string;
  second_customer_session_token: string;
  large_customer_id: string;
  large_customer_session_token: string;
  free_product_id: string;
  paid_product_id: string;
  one_time_product_id: string;
  archived_product_id: string;
  webhook_endpoint_ids: string[];
  /** A webhook event of the second demo endpoint, delivered once (List Webhook Deliveries, Redeliver). */
  webhook_event_id: string;
  /** An OAuth client the demo user registered through Create Client, with its RFC 7592 credentials. */
  oauth_client: {
    client_id: string;
    client_secret: string;
    registration_access_token: string;
    registration_client_uri: string;
  };
  /** Tokens the demo client holds for the demo organization (consent, then code exchange). */
  oauth_tokens: { access_token: string; refresh_token: string };
  /** The loopback receiver the demo endpoints point at (`npm start` runs it), when they do. */
  webhook_receiver_url?: string;
  other_organization: {
    organization_id: string;
    personal_access_token: string;
    customer_id: string;
    free_product_id: string;
    webhook_endpoint_id: string;
  };
}

/** The demo customer's id in the integrator's own system (Create Customer Session by external id). */
export const DEMO_CUSTOMER_EXTERNAL_ID = 'crm-ada-001';

/** 60 ISO 4217 codes: with two wallet types, 120 wallets for the large customer. */
export const DEMO_CURRENCIES = [
  'usd',
  'eur',
  'gbp',
  'jpy',
  'chf',
  'cad',
  'aud',
  'nzd',
  'sek',
  'nok',
  'dkk',
  'pln',
  'czk',
  'huf',
  'ron',
  'bgn',
  'isk',
  'try',
  'ils',
  'aed',
  'sar',
  'qar',
  'kwd',
  'bhd',
  'omr',
  'jod',
  'egp',
  'mad',
  'tnd',
  'zar',
  'ngn',
  'kes',
  'ghs',
  'inr',
  'pkr',
  'bdt',
  'lkr',
  'npr',
  'cny',
  'hkd',
  'twd',
  'krw',
  'sgd',
  'myr',
  'thb',
  'idr',
  'php',
  'vnd',
  'mxn',
  'brl',
  'ars',
  'clp',
  'cop',
  'pen',
  'uyu',
  'pyg',
  'bob',
  'crc',
  'dop',
  'gtq',
] as const;

const WALLET_TYPES: WalletType[] = ['usage', 'billing'];
const ALL = ALL_SCOPES.join(' ');

/** Creation times a minute apart, oldest first, ending an hour before now: distinct and ordered. */
function timeline(ctx: AdminContext, count: number): Date[] {
  const end = ctx.now().getTime() - 3_600_000;
  return Array.from({ length: count }, (_, i) => new Date(end - (count - i) * 60_000));
}

async function inChunks<T>(items: T[], size: number, work: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(work));
}

/** Creates the demo customer's wallets; returns the id of the one with the highest balance. */
async function demoCustomerWallets(ctx: AdminContext, customer: CustomerRecord): Promise<string> {
  // 14 wallets, 7 currencies × both types; 2500 appears twice, two balances are negative.
  const balances = [2500, 0, -1200, 2500, 10_000, 75, 990, -5, 123_456, 4000, 1, 60_000, 300, 42];
  const times = timeline(ctx, balances.length);
  const ids: string[] = [];
  await inChunks(
    balances.map((balance, i) => ({ balance, i })),
    7,
    async ({ balance, i }) => {
      const wallet = await createWallet(ctx, {
        customer,
        currency: DEMO_CURRENCIES[Math.floor(i / 2)] as string,
        type: WALLET_TYPES[i % 2] as WalletType,
        balance,
        createdAt: times[i] as Date,
      });
      ids[i] = wallet.id;
    },
  );
  return ids[balances.indexOf(Math.max(...balances))] as string;
}

async function largeCustomerWallets(ctx: AdminContext, customer: CustomerRecord): Promise<void> {
  const slots = DEMO_CURRENCIES.flatMap((currency) => WALLET_TYPES.map((type) => ({ currency, type })));
  const times = timeline(ctx, slots.length);
  await inChunks(
    slots.map((slot, i) => ({ ...slot, i })),
    10,
    ({ currency, type, i }) =>
      createWallet(ctx, {
        customer,
        currency,
        type,
        // Deterministic spread with repeats and negatives, so balance sorting has ties to break.
        balance: ((i * 7919) % 5000) - 1000,
        createdAt: times[i] as Date,
      }),
  );
}

/**
 * The demo client's tokens, made as a client gets them: the owner's consent, then the code exchange
 * with the PKCE verifier, through the same services the operations run.
 */
async function demoClientTokens(
  deps: Dependencies,
  owner: UserPrincipal,
  client: OAuth2ClientRegistration,
  issuer: string,
): Promise<{ access_token: string; refresh_token: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const { location } = await consent(
    deps,
    owner,
    {
      action: 'allow',
      response_type: 'code',
      client_id: client.client_id,
      scope: client.scope,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    },
    { issuer },
  );
  const code = new URL(location).searchParams.get('code') ?? '';
  const authenticated: ClientPrincipal = {
    kind: 'oauth_client',
    clientId: client.client_id,
    client: (await findOAuthClient(deps.table, client.client_id)) as RegisteredClient,
    method: 'client_secret_post',
  };
  // The demo client asks for openid: its ID Token is signed and dropped (the demo prints the tokens only).
  const tokens = await requestToken({ idTokenKeys: localIdTokenKeys(), ...deps, issuer }, authenticated, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
  });
  return { access_token: tokens.access_token, refresh_token: tokens.refresh_token ?? '' };
}

export interface SeedOptions {
  /**
   * The URL of a demo webhook endpoint (`1`, `2`, `3`, and `other` for the second tenant's); default:
   * names under `.example`, which never resolve (every delivery to them fails).
   */
  webhookUrl?: (endpoint: '1' | '2' | '3' | 'other') => string;
}

export async function seedDemo(
  ctx: AdminContext,
  baseUrl: string,
  options: SeedOptions = {},
): Promise<DemoData> {
  const webhookUrl =
    options.webhookUrl ??
    ((endpoint: string) =>
      endpoint === 'other'
        ? 'https://hooks.other.example/polar'
        : `https://hooks.acme.example/polar/${endpoint}`);
  const org = await createOrganization(ctx, { name: 'Acme Demo', defaultCurrency: 'usd' });
  const user = await createUser(ctx, { email: `owner+${org.id.slice(0, 8)}@acme.example` });
  await addMember(ctx, org.id, user.id);
  const pat = await createPersonalAccessToken(ctx, {
    userId: user.id,
    scope: ALL,
    comment: 'demo: every scope',
  });
  const patWithoutScopes = await createPersonalAccessToken(ctx, {
    userId: user.id,
    scope: '',
    comment: 'demo: no scope',
  });

  const customer = await createCustomer(ctx, {
    organizationId: org.id,
    email: 'ada@customer.example',
    name: 'Ada',
    externalId: DEMO_CUSTOMER_EXTERNAL_ID,
  });
  const second = await createCustomer(ctx, {
    organizationId: org.id,
    email: 'grace@customer.example',
    name: 'Grace',
  });
  const large = await createCustomer(ctx, {
    organizationId: org.id,
    email: 'big@customer.example',
    name: 'Big Co',
  });
  const walletId = await demoCustomerWallets(ctx, customer);
  await createWallet(ctx, { customer: second, currency: 'usd', type: 'usage', balance: 700 });
  await largeCustomerWallets(ctx, large);

  const session = await createCustomerSession(ctx, { customer });
  const expired = await createCustomerSession(ctx, { customer, ttlSeconds: -60 });
  const secondSession = await createCustomerSession(ctx, { customer: second });
  const largeSession = await createCustomerSession(ctx, { customer: large });

  const product = (name: string, extra: Partial<Parameters<typeof createProduct>[1]>) =>
    createProduct(ctx, {
      organizationId: org.id,
      name,
      recurringInterval: 'month',
      priceAmount: 0,
      currency: org.default_currency,
      ...extra,
    });
  const free = await product('Free plan', {});
  const paid = await product('Pro plan', { priceAmount: 1500 });
  const oneTime = await product('Free e-book', { recurringInterval: null });
  const archived = await product('Legacy free plan', { archived: true });
  // The large and the demo customer subscribed to the free plan, as Create Subscription does it.
  const subscriber: UserPrincipal = {
    kind: 'user',
    userId: user.id,
    tokenId: pat.record.token_id,
    organizationIds: [org.id],
    scopes: new Set(['subscriptions:write']),
  };
  const subscription = await createSubscription(ctx, subscriber, {
    product_id: free.id,
    customer_id: large.id,
    metadata: { source: 'demo seed' },
  });
  const customerSubscription = await createSubscription(ctx, subscriber, {
    product_id: free.id,
    customer_id: customer.id,
  });

  const owner: UserPrincipal = {
    kind: 'user',
    userId: user.id,
    tokenId: pat.record.token_id,
    organizationIds: [org.id],
    scopes: new Set(ALL_SCOPES),
  };
  const client = await createClient(
    ctx,
    owner,
    { redirect_uris: ['http://127.0.0.1:8080/callback'], client_name: 'Demo app', scope: 'openid email' },
    { baseUrl },
  );

  const oauthTokens = await demoClientTokens(ctx, owner, client, baseUrl);

  const endpoints = [];
  for (const [i, format] of (['raw', 'slack', 'discord'] as const).entries()) {
    endpoints.push(
      await createWebhookEndpoint(ctx, {
        organizationId: org.id,
        url: webhookUrl(String(i + 1) as '1' | '2' | '3'),
        name: `Demo endpoint ${i + 1}`,
        format,
      }),
    );
  }

  const otherOrg = await createOrganization(ctx, { name: 'Other Tenant', defaultCurrency: 'eur' });
  const otherUser = await createUser(ctx, { email: `owner+${otherOrg.id.slice(0, 8)}@other.example` });
  await addMember(ctx, otherOrg.id, otherUser.id);
  const otherPat = await createPersonalAccessToken(ctx, {
    userId: otherUser.id,
    scope: ALL,
    comment: 'demo',
  });
  const otherCustomer = await createCustomer(ctx, {
    organizationId: otherOrg.id,
    email: 'eve@other.example',
  });
  await createWallet(ctx, { customer: otherCustomer, currency: 'eur', type: 'usage', balance: 100 });
  const otherFree = await createProduct(ctx, {
    organizationId: otherOrg.id,
    name: 'Other free plan',
    recurringInterval: 'month',
    priceAmount: 0,
    currency: otherOrg.default_currency,
  });
  const otherEndpoint = await createWebhookEndpoint(ctx, {
    organizationId: otherOrg.id,
    url: webhookUrl('other'),
  });

  const webhookEvent = await recordDeliveredWebhookEvent(ctx, {
    organizationId: org.id,
    endpointId: endpoints[1]?.endpoint.id as string,
  });

  return {
    base_url: baseUrl,
    organization_id: org.id,
    personal_access_token: pat.token,
    personal_access_token_without_scopes: patWithoutScopes.token,
    customer_id: customer.id,
    customer_external_id: DEMO_CUSTOMER_EXTERNAL_ID,
    wallet_id: walletId,
    subscription_id: subscription.id,
    customer_subscription_id: customerSubscription.id,
    customer_session_token: session.token,
    expired_customer_session_token: expired.token,
    second_customer_id: second.id,
    second_customer_session_token: secondSession.token,
    large_customer_id: large.id,
    large_customer_session_token: largeSession.token,
    free_product_id: free.id,
    paid_product_id: paid.id,
    one_time_product_id: oneTime.id,
    archived_product_id: archived.id,
    webhook_endpoint_ids: endpoints.map(({ endpoint }) => endpoint.id),
    oauth_tokens: oauthTokens,
    webhook_event_id: webhookEvent.id,
    oauth_client: {
      client_id: client.client_id,
      client_secret: client.client_secret ?? '',
      registration_access_token: client.registration_access_token,
      registration_client_uri: client.registration_client_uri,
    },
    other_organization: {
      organization_id: otherOrg.id,
      personal_access_token: otherPat.token,
      customer_id: otherCustomer.id,
      free_product_id: otherFree.id,
      webhook_endpoint_id: otherEndpoint.endpoint.id,
    },
  };
}
