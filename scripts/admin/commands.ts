/**
 * Operator commands: what no public operation creates (organizations, users, tokens, and for now
 * wallets and webhook endpoints), and customers, products and sessions through the API's own
 * services. The admin CLI and the demo seed both use these, so the demo is built exactly as an
 * operator would build real data. Secrets are returned once to the caller; the table stores only
 * hashes or ciphertext.
 */

import { randomUUID } from 'node:crypto';
import { recordAttempt, recordWebhookEvent } from '#shared/data/deliveries.ts';
import {
  addMembership,
  getOrganization,
  insertOrganization,
  insertUser,
  organizationIdsOf,
  removeMembership,
} from '#shared/data/organizations.ts';
import type {
  CustomerRecord,
  CustomerSessionRecord,
  Metadata,
  OrganizationRecord,
  PersonalAccessTokenRecord,
  ProductRecord,
  UserRecord,
  WalletRecord,
  WalletType,
  WebhookEndpointRecord,
  WebhookEventRecord,
  WebhookFormat,
} from '#shared/data/records.ts';
import { insertToken, listPersonalAccessTokens, revokePersonalAccessToken } from '#shared/data/tokens.ts';
import { insertWallet } from '#shared/data/wallets.ts';
import { derivedId, newId } from '#shared/domain/ids.ts';
import type { RecurringInterval } from '#shared/domain/period.ts';
import { parseScope } from '#shared/domain/scopes.ts';
import { generateSecret, hashSecret, secretPrefixes } from '#shared/domain/secrets.ts';
import type { ProductPriceCreate } from '#shared/generated/api-types.ts';
import openapi from '#shared/generated/openapi.json' with { type: 'json' };
import type { Dependencies } from '#shared/runtime.ts';
import { createCustomerIn } from '#shared/services/create-customer.ts';
import { openCustomerSession } from '#shared/services/create-customer-session.ts';
import { newProduct, storeNewProduct } from '#shared/services/create-product.ts';
import { openWebhookEndpoint } from '#shared/services/webhook-endpoints.ts';
import { envelope, webhookEventId } from '#shared/webhooks/events.ts';

/** What operator commands run with: the services' own dependencies (the table, a clock, the webhook key set). */
export type AdminContext = Dependencies;

const iso = (ctx: AdminContext) => ctx.now().toISOString();

export { CUSTOMER_SESSION_TTL_SECONDS } from '#shared/services/create-customer-session.ts';

function slugify(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'org'
  );
}

export async function createOrganization(
  ctx: AdminContext,
  input: { name: string; slug?: string; defaultCurrency?: string },
): Promise<OrganizationRecord> {
  const organization: OrganizationRecord = {
    id: newId(),
    name: input.name,
    slug: input.slug ?? `${slugify(input.name)}-${newId().slice(0, 8)}`,
    default_currency: (input.defaultCurrency ?? 'usd').toLowerCase(),
    created_at: iso(ctx),
    modified_at: null,
  };
  await insertOrganization(ctx.table, organization);
  return organization;
}

export async function createUser(ctx: AdminContext, input: { email: string }): Promise<UserRecord> {
  const user: UserRecord = { id: newId(), email: input.email, created_at: iso(ctx) };
  await insertUser(ctx.table, user);
  return user;
}

export async function addMember(ctx: AdminContext, organizationId: string, userId: string): Promise<void> {
  await addMembership(ctx.table, { organization_id: organizationId, user_id: userId, created_at: iso(ctx) });
}

/** A personal access token expires 30 days after its creation unless the operator names another time. */
export const PAT_DEFAULT_TTL_DAYS = 30;
/** No personal access token lives longer than a year: a forgotten one ends by itself. */
export const PAT_MAX_TTL_DAYS = 365;

/** An expiry the operator asked for that the lifecycle does not allow (the CLI's exit 2). */
export class TokenLifetimeRefused extends Error {}

export async function createPersonalAccessToken(
  ctx: AdminContext,
  input: { userId: string; scope: string; expiresAt?: Date; comment?: string },
): Promise<{ token: string; record: PersonalAccessTokenRecord }> {
  const { scopes, unknown } = parseScope(input.scope);
  if (unknown.length > 0) throw new Error(`unknown scope: ${unknown.join(' ')}`);
  const now = ctx.now();
  const expiresAt = input.expiresAt ?? new Date(now.getTime() + PAT_DEFAULT_TTL_DAYS * 86_400_000);
  if (expiresAt.getTime() <= now.getTime())
    throw new TokenLifetimeRefused('the expiry must be in the future');
  if (expiresAt.getTime() > now.getTime() + PAT_MAX_TTL_DAYS * 86_400_000)
    throw new TokenLifetimeRefused(`a personal access token lives at most ${PAT_MAX_TTL_DAYS} days`);
  const token = generateSecret(secretPrefixes.personalAccessToken);
  const record: PersonalAccessTokenRecord = {
    kind: 'personal_access_token',
    token_id: newId(),
    user_id: input.userId,
    organization_ids: await organizationIdsOf(ctx.table, input.userId),
    scope: scopes.join(' '),
    comment: input.comment ?? '',
    created_at: now.toISOString(),
    expires_at: expiresAt.toISOString(),
    revoked_at: null,
  };
  await insertToken(ctx.table, hashSecret(token), record);
  return { token, record };
}

/** What an operator sees of a personal access token: never the token, never its hash. */
export interface PersonalAccessTokenListing {
  id: string;
  scopes: string[];
  comment: string;
  organization_ids: string[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  /** `active`, `expired` or `revoked`, as authentication would judge it now. */
  status: 'active' | 'expired' | 'revoked';
}

function listing(ctx: AdminContext, token: PersonalAccessTokenRecord): PersonalAccessTokenListing {
  const expired = token.expires_at !== null && Date.parse(token.expires_at) <= ctx.now().getTime();
  return {
    id: token.token_id,
    scopes: token.scope === '' ? [] : token.scope.split(' '),
    comment: token.comment,
    organization_ids: token.organization_ids,
    created_at: token.created_at,
    expires_at: token.expires_at,
    revoked_at: token.revoked_at,
    status: token.revoked_at !== null ? 'revoked' : expired ? 'expired' : 'active',
  };
}

export async function listPersonalAccessTokensOf(
  ctx: AdminContext,
  userId: string,
): Promise<PersonalAccessTokenListing[]> {
  return (await listPersonalAccessTokens(ctx.table, userId)).map((token) => listing(ctx, token));
}

/** Revokes a user's token by id; `undefined` when the user has no such token. */
export async function revokePersonalAccessTokenOf(
  ctx: AdminContext,
  userId: string,
  tokenId: string,
): Promise<PersonalAccessTokenListing | undefined> {
  const revoked = await revokePersonalAccessToken(ctx.table, userId, tokenId, iso(ctx));
  return revoked && listing(ctx, revoked);
}

/**
 * Ends a membership: the membership item and the organization in each of the user's personal
 * access tokens go in one transaction, so existing tokens lose the organization at once.
 */
export async function removeMember(
  ctx: AdminContext,
  organizationId: string,
  userId: string,
): Promise<boolean> {
  return removeMembership(ctx.table, organizationId, userId);
}

/** Create Customer's own service: the customer, its uniqueness guards and list entries, or nothing. */
export async function createCustomer(
  ctx: AdminContext,
  input: { organizationId: string; email: string; name?: string; externalId?: string; metadata?: Metadata },
): Promise<CustomerRecord> {
  return createCustomerIn(ctx, input.organizationId, {
    email: input.email,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.externalId !== undefined ? { external_id: input.externalId } : {}),
    ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
  });
}

/**
 * A product with one fixed price, made by Create Product's own rules (`newProduct`) and written as
 * Create Product writes it: the product and its list entries in one transaction.
 */
export async function createProduct(
  ctx: AdminContext,
  input: {
    organizationId: string;
    name: string;
    description?: string;
    recurringInterval: RecurringInterval | null;
    recurringIntervalCount?: number;
    priceAmount: number;
    currency: string;
    archived?: boolean;
  },
): Promise<ProductRecord> {
  const organization = await getOrganization(ctx.table, input.organizationId);
  if (!organization) throw new Error(`no organization ${input.organizationId}`);
  const product = newProduct(
    {
      name: input.name,
      description: input.description ?? null,
      recurring_interval: input.recurringInterval,
      recurring_interval_count: input.recurringInterval ? (input.recurringIntervalCount ?? 1) : null,
      prices: [
        {
          amount_type: 'fixed',
          price_amount: input.priceAmount,
          price_currency: input.currency.toLowerCase() as ProductPriceCreate['price_currency'],
        },
      ],
    },
    organization.id,
    organization.default_currency,
    ctx.now(),
  );
  const created = { ...product, is_archived: input.archived ?? false };
  await storeNewProduct(ctx.table, created);
  return created;
}

const WALLET_CURRENCIES: ReadonlySet<string> = new Set(openapi.components.schemas.Currency.enum);

export async function createWallet(
  ctx: AdminContext,
  input: { customer: CustomerRecord; currency: string; type: WalletType; balance: number; createdAt?: Date },
): Promise<WalletRecord> {
  // The wallet slot bounds a customer's wallets by currencies × types only if the currency is one
  // of the API's (List Wallets reads them all: shared/data/wallets.ts, WALLETS_PER_CUSTOMER_MAX).
  const currency = input.currency.toLowerCase();
  if (!WALLET_CURRENCIES.has(currency)) {
    throw new Error(`not a currency of the API (components.schemas.Currency): ${input.currency}`);
  }
  const wallet: WalletRecord = {
    id: newId(),
    customer_id: input.customer.id,
    organization_id: input.customer.organization_id,
    wallet_type: input.type,
    currency,
    balance: input.balance,
    created_at: (input.createdAt ?? ctx.now()).toISOString(),
    modified_at: null,
  };
  await insertWallet(ctx.table, wallet);
  return wallet;
}

export async function createWebhookEndpoint(
  ctx: AdminContext,
  input: { organizationId: string; url: string; name?: string; format?: WebhookFormat; events?: string[] },
): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  // The same rules and the same write as Create Webhook Endpoint.
  return openWebhookEndpoint(ctx, input.organizationId, {
    url: input.url,
    name: input.name ?? null,
    format: input.format ?? 'raw',
    events: input.events ?? ['subscription.created'],
  });
}

/**
 * A webhook event of an endpoint, as the relay records it, delivered at its first attempt (the
 * attempt and its list entries recorded as the deliverer records them): something for List Webhook
 * Deliveries to show and Redeliver to send again without running the pipeline (the demo seed, tests).
 */
export async function recordDeliveredWebhookEvent(
  ctx: Pick<AdminContext, 'table'>,
  input: {
    organizationId: string;
    endpointId: string;
    at?: Date /** A fixed id (a test fixture's). */;
    id?: string;
    /**
     * An outbox item to point at (its payload stored there, once, as the relay records events);
     * without it the webhook event holds a payload of its own, as events written before that did.
     */
    outbox?: { PK: string; SK: string; id: string; type: string; payload: string };
  },
): Promise<WebhookEventRecord> {
  const eventId = input.outbox?.id ?? randomUUID();
  const at = (input.at ?? new Date()).toISOString();
  const pending: WebhookEventRecord = {
    id: input.id ?? webhookEventId(eventId, input.endpointId),
    event_id: eventId,
    endpoint_id: input.endpointId,
    organization_id: input.organizationId,
    type: input.outbox?.type ?? 'customer.created',
    ...(input.outbox
      ? { event_key: { PK: input.outbox.PK, SK: input.outbox.SK } }
      : { payload: envelope('customer.created', at, { id: randomUUID() }) }),
    created_at: at,
    modified_at: null,
    status: 'pending',
    round: 1,
    attempts: 0,
    last_http_code: null,
  };
  if (!(await recordWebhookEvent(ctx.table, pending))) throw new Error('webhook event already recorded');
  const delivered: WebhookEventRecord = {
    ...pending,
    modified_at: at,
    status: 'succeeded',
    attempts: 1,
    last_http_code: 200,
  };
  const outcome = await recordAttempt(
    ctx.table,
    pending,
    {
      id: derivedId('delivery-attempt', pending.id, '1', '1'),
      webhook_event_id: pending.id,
      endpoint_id: input.endpointId,
      organization_id: input.organizationId,
      type: pending.type,
      created_at: at,
      round: 1,
      attempt: 1,
      succeeded: true,
      http_code: 200,
      response: '',
      duration_ms: 5,
      webhook_event: delivered,
    },
    undefined,
    input.outbox ? Buffer.byteLength(input.outbox.payload, 'utf8') : 0,
  );
  if (outcome !== 'recorded') throw new Error(`delivery attempt not recorded: ${outcome}`);
  return delivered;
}

export async function createCustomerSession(
  ctx: AdminContext,
  input: { customer: CustomerRecord; ttlSeconds?: number },
): Promise<{ token: string; record: CustomerSessionRecord }> {
  return openCustomerSession(ctx, input.customer, input.ttlSeconds);
}
