/**
 * What the table stores for each entity (attribute names are the API's
 * snake_case names). Key attributes are added and stripped by `item`/`record`.
 */

import type { SubType } from '../domain/oauth.ts';
import type { RecurringInterval } from '../domain/period.ts';
import type { RegisteredClient } from '../domain/principals.ts';
import { LIVE } from '../domain/subscription-lifecycle.ts';

export type Metadata = Record<string, string | number | boolean>;

export interface OrganizationRecord {
  id: string;
  name: string;
  slug: string;
  default_currency: string;
  created_at: string;
  modified_at: string | null;
}

export interface UserRecord {
  id: string;
  email: string;
  created_at: string;
}

export interface MembershipRecord {
  organization_id: string;
  user_id: string;
  created_at: string;
}

interface TokenBase {
  token_id: string;
  scope: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export interface PersonalAccessTokenRecord extends TokenBase {
  kind: 'personal_access_token';
  user_id: string;
  /** The user's memberships, copied here so authentication is one read; kept in step by the admin code. */
  organization_ids: string[];
  comment: string;
}

export interface CustomerSessionRecord extends TokenBase {
  kind: 'customer_session';
  customer_id: string;
  organization_id: string;
}

export type TokenRecord = PersonalAccessTokenRecord | CustomerSessionRecord;

export interface AddressRecord {
  line1: string | null;
  line2: string | null;
  postal_code: string | null;
  city: string | null;
  state: string | null;
  country: string;
}

export interface CustomerRecord {
  id: string;
  organization_id: string;
  created_at: string;
  modified_at: string | null;
  metadata: Metadata;
  external_id: string | null;
  email: string | null;
  email_verified: boolean;
  type: 'individual' | 'team';
  name: string | null;
  billing_name: string | null;
  billing_address: AddressRecord | null;
  tax_id: [string, string] | null;
  locale: string | null;
  deleted_at: string | null;
  /** Number of wallets, maintained in the same transaction that creates one, so listing never counts. */
  wallet_count: number;
}

export type TaxBehavior = 'location' | 'inclusive' | 'exclusive';

interface PriceBase {
  id: string;
  created_at: string;
  modified_at: string | null;
  price_currency: string;
  /** Absent on prices written before it was kept: null. */
  tax_behavior?: TaxBehavior | null;
  is_archived: boolean;
}

export interface FixedPriceRecord extends PriceBase {
  amount_type: 'fixed';
  price_amount: number;
}

/** What a metered price shows of its meter: the meter as it was when the price was written. */
export interface PriceMeter {
  id: string;
  name: string;
  unit: 'scalar' | 'token' | 'custom';
  custom_label: string | null;
  custom_multiplier: number | null;
}

export interface MeteredPriceRecord extends PriceBase {
  amount_type: 'metered_unit';
  /** Cents per unit, canonical decimal text (`shared/domain/metered-amount.ts`). */
  unit_amount: string;
  cap_amount: number | null;
  meter_id: string;
  meter: PriceMeter;
}

export type PriceRecord = FixedPriceRecord | MeteredPriceRecord;

export interface ProductRecord {
  id: string;
  organization_id: string;
  created_at: string;
  modified_at: string | null;
  name: string;
  description: string | null;
  visibility: 'draft' | 'private' | 'public';
  recurring_interval: RecurringInterval | null;
  recurring_interval_count: number | null;
  is_archived: boolean;
  metadata: Metadata;
  /**
   * Live prices first (the one in the organization's default currency leading), then archived ones,
   * kept because subscriptions billed on them still show them.
   */
  prices: PriceRecord[];
  deleted_at: string | null;
  /** Counts the product's writes; an update is conditioned on it (absent on older items: 0). */
  version?: number;
  /**
   * Internal, never presented: `'sharded'` once its list entries are in its shard of the product
   * list (`shared/data/products.ts` `productListing`); absent on a product listed before the shards.
   */
  list_layout?: 'sharded';
}

export type SubscriptionStatus = 'active' | 'canceled';
export type CancellationReason =
  | 'customer_service'
  | 'low_quality'
  | 'missing_features'
  | 'switched_service'
  | 'too_complex'
  | 'too_expensive'
  | 'unused'
  | 'other';

export interface SubscriptionRecord {
  id: string;
  organization_id: string;
  created_at: string;
  modified_at: string | null;
  amount: number;
  currency: string;
  recurring_interval: RecurringInterval;
  recurring_interval_count: number;
  status: SubscriptionStatus;
  current_period_start: string;
  current_period_end: string;
  started_at: string;
  cancel_at_period_end: boolean;
  canceled_at: string | null;
  ends_at: string | null;
  ended_at: string | null;
  customer_cancellation_reason: CancellationReason | null;
  customer_cancellation_comment: string | null;
  customer_id: string;
  product_id: string;
  /** Ids of the product's prices the subscription is billed on. */
  price_ids: string[];
  metadata: Metadata;
  created_by_user_id: string;
  /** Random id of the last write (`shared/data/subscriptions.ts`); absent until the first change. */
  change_id?: string;
  /**
   * `'sharded'`: its entries in its organization's and its product's lists are in their shards
   * (`subscriptionListings`, shared/data/subscriptions.ts); absent on one written before the shards,
   * listed in the unsharded partitions until `subscription migrate-lists` moves it. Never presented.
   */
  list_layout?: 'sharded';
}

/** A customer has at most one wallet per currency and type (`keys.walletSlot`). */
export const WALLET_TYPES = ['usage', 'billing'] as const;
export type WalletType = (typeof WALLET_TYPES)[number];

export interface WalletRecord {
  id: string;
  customer_id: string;
  organization_id: string;
  wallet_type: WalletType;
  currency: string;
  balance: number;
  created_at: string;
  modified_at: string | null;
}

export type WebhookFormat = 'raw' | 'discord' | 'slack';

/** Why an endpoint stopped receiving events: its owner said so, it answered 410 Gone, or it kept failing. */
export type WebhookDisabledReason = 'disabled_by_user' | 'endpoint_gone' | 'too_many_failures';

export interface WebhookEndpointRecord {
  id: string;
  organization_id: string;
  url: string;
  name: string | null;
  format: WebhookFormat;
  /**
   * The signing secret, sealed (AES-256-GCM) under the current key of the webhook key set and bound
   * to this endpoint's id: `<key version>.<base64url>` (`shared/domain/keyring.ts`).
   */
  secret_ciphertext: string;
  /** After a reset: the replaced secret, sealed the same way, which keeps signing until `previous_secret_expires_at`. */
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: string | null;
  events: string[];
  enabled: boolean;
  /** Set whenever `enabled` is false for a reason other than deletion; null while enabled. */
  disabled_reason: WebhookDisabledReason | null;
  /**
   * Consecutive events whose deliveries all failed (the delivery pipeline raises it, resets it on a
   * success or when the endpoint is enabled again, and disables the endpoint at its threshold).
   */
  failure_count: number;
  created_at: string;
  modified_at: string | null;
  deleted_at: string | null;
  /** Raised by every write: each change is conditioned on the revision it read (optimistic locking). */
  revision: number;
}

/** An outbox item: one event of one change, written in the change's own transaction. */
export interface OutboxEventRecord {
  id: string;
  organization_id: string;
  type: string;
  /** When it happened (the envelope's `timestamp`). */
  timestamp: string;
  /** The exact body endpoints receive (`envelope()`). */
  payload: string;
  subject_kind: string;
  subject_id: string;
  /** The id of the request that made the change (API Gateway's), null for a scheduled change. */
  correlation_id?: string | null;
}

export type WebhookEventStatus = 'pending' | 'succeeded' | 'failed' | 'skipped';

/** One event for one endpoint: its id is the `webhook-id` every attempt of it carries. */
export interface WebhookEventRecord {
  id: string;
  event_id: string;
  endpoint_id: string;
  organization_id: string;
  type: string;
  /**
   * The body, on webhook events written before it was kept only in the event's outbox item
   * (`event_key`); absent on newer ones.
   */
  payload?: string;
  /** The outbox item (`EVENT#…`) holding the payload: stored once, for every endpoint and attempt. */
  event_key?: { PK: string; SK: string };
  created_at: string;
  modified_at: string | null;
  status: WebhookEventStatus;
  /** Delivery rounds: the relay starts round 1, each redelivery the next one. */
  round: number;
  /** Attempts in the current round (the retry ladder counts these). */
  attempts: number;
  last_http_code: number | null;
  /** The change's correlation id (its outbox item's), logged with every attempt. */
  correlation_id?: string | null;
}

/** One delivery attempt (the API's `WebhookDelivery`). */
export interface DeliveryAttemptRecord {
  id: string;
  webhook_event_id: string;
  endpoint_id: string;
  organization_id: string;
  type: string;
  created_at: string;
  round: number;
  attempt: number;
  succeeded: boolean;
  http_code: number | null;
  /** A bounded snippet of the answer, or why there was none. */
  response: string | null;
  duration_ms: number;
  /** The webhook event as this attempt left it. */
  webhook_event: WebhookEventRecord;
}

export type OAuthClientRecord = RegisteredClient;

/** Who an OAuth authorization acts for, as the consent fixed it. */
export interface OAuthSubject {
  sub_type: SubType;
  /** The consenting user (also for an organization subject: the one who consented). */
  user_id: string;
  /** The organizations the tokens act in: the user's at consent, or the one organization. */
  organization_ids: string[];
}

/**
 * One authorization: what a consent granted and the tokens issued from it since (a token family).
 * It names the family's one live access token and refresh token, so that revoking the family
 * revokes exactly those.
 */
export interface OAuthGrantRecord extends OAuthSubject {
  grant_id: string;
  client_id: string;
  scope: string;
  created_at: string;
  access_token_hash: string;
  access_expires_at: string;
  /** Null for a client without the refresh_token grant. */
  refresh_token_hash: string | null;
  refresh_expires_at: string | null;
  refreshed_at: string | null;
  rotations: number;
  revoked_at: string | null;
  /** Its absolute end (`GRANT_MAX_LIFETIME_SECONDS` after the code); TTL removes it a day later. */
  expires_at?: string;
}

interface OAuthTokenBase extends OAuthSubject {
  token_id: string;
  grant_id: string;
  client_id: string;
  scope: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  /** The grant's absolute end (`GRANT_MAX_LIFETIME_SECONDS` after the code's exchange): no refresh past it. */
  grant_expires_at?: string;
}

/** An OAuth access token, in the partition the authenticator reads (TOKEN#<sha256>). */
export interface OAuthAccessTokenRecord extends OAuthTokenBase {
  kind: 'oauth_access_token';
}

/** A refresh token: used once, then replaced (rotation); used again, its family is revoked. */
export interface OAuthRefreshTokenRecord extends OAuthTokenBase {
  kind: 'oauth_refresh_token';
  /** Set when a refresh replaced it: any later use is a replay. */
  rotated_at: string | null;
  /** The access token issued with it, ended when it is used. */
  access_token_hash: string;
  access_expires_at: string;
}

/** Whatever the token partition holds under a hash. */
export type StoredToken = TokenRecord | OAuthAccessTokenRecord | OAuthRefreshTokenRecord;

/** A code of the authorization code flow, bound to everything the consent fixed (RFC 6749 §4.1.3). */
export interface AuthorizationCodeRecord extends OAuthSubject {
  client_id: string;
  redirect_uri: string;
  /** The authorization request named the redirect URI, so the token request must repeat it. */
  redirect_uri_given: boolean;
  scope: string;
  /** RFC 7636 S256 challenge. */
  code_challenge: string;
  /** OpenID Connect: the authorization request's `nonce`, for the ID Token. */
  nonce?: string;
  /** OpenID Connect: when the user authenticated (consented), in seconds; absent on older codes. */
  auth_time?: number;
  created_at: string;
  expires_at: string;
}

/**
 * `W…`: the five wallet sort keys of the retired local indexes (`WCA`, `WBC`, `WBCD`, `WB`, `WBD`),
 * still on wallets written before them and copied as they are by `npm run migrate:table`.
 */
const KEY_ATTRIBUTES = /^(PK|SK|GSI\d+PK|GSI\d+SK|W[A-Z]*|entity|expires_ttl)$/;

/** Builds a table item: keys, entity tag, the record's attributes. */
export function item<T extends object>(keys: object, entity: string, record: T): Record<string, unknown> {
  return { ...keys, entity, ...record };
}

/** Strips key attributes from a stored item, leaving the record. */
export function record<T>(stored: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(stored)) {
    if (!KEY_ATTRIBUTES.test(name)) out[name] = value;
  }
  return out as T;
}

/**
 * A stored customer. Its metadata is kept as JSON text (DynamoDB numbers cannot hold every JSON
 * number: `2e-323`, `1e300`), as a subscription's is; customers written before that hold a map.
 */
export function customerRecord(stored: Record<string, unknown>): CustomerRecord {
  const customer = record<CustomerRecord & { metadata: unknown }>(stored);
  const metadata = typeof customer.metadata === 'string' ? JSON.parse(customer.metadata) : customer.metadata;
  return { ...customer, metadata };
}

/** The attributes a customer is stored with (metadata as JSON text, see `customerRecord`). */
export const storedCustomer = (customer: CustomerRecord) => ({
  ...customer,
  metadata: JSON.stringify(customer.metadata),
});

/** A stored product (its metadata as JSON text, as a customer's), for the table and its list entries. */
export type StoredProduct = Omit<ProductRecord, 'metadata'> & { metadata: string };

/** A stored product or list entry; products written before metadata was kept as text hold a map. */
export function productRecord(stored: Record<string, unknown>): ProductRecord {
  const product = record<ProductRecord & { metadata: unknown }>(stored);
  const metadata = typeof product.metadata === 'string' ? JSON.parse(product.metadata) : product.metadata;
  return { ...product, metadata };
}

export const storedProduct = (product: ProductRecord): StoredProduct => ({
  ...product,
  metadata: JSON.stringify(product.metadata),
});

/** A subscription as the table holds it: metadata as its JSON text (see `subscriptionRecord`). */
export type StoredSubscription = Omit<SubscriptionRecord, 'metadata'> & { metadata: string };

/**
 * The attributes a subscription is stored with, in its item and in its list entries: DynamoDB numbers
 * cannot hold every JSON number (1e300, 1e-200, integers past 2^53 in JavaScript), so client metadata
 * is kept as its JSON text.
 */
export const storedSubscription = (subscription: SubscriptionRecord): StoredSubscription => ({
  ...subscription,
  metadata: JSON.stringify(subscription.metadata),
});

/** A stored subscription (item or list entry), its metadata parsed back; older items read as live ones. */
export function subscriptionRecord(stored: Record<string, unknown>): SubscriptionRecord {
  const subscription = record<SubscriptionRecord & { metadata: unknown }>(stored);
  const { metadata } = subscription;
  return {
    ...LIVE,
    ...subscription,
    metadata: typeof metadata === 'string' ? JSON.parse(metadata) : metadata,
  };
}
