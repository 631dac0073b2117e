/**
 * The single DynamoDB table: attribute names, indexes and key builders.
 *
 * This module is the one definition shared by the data layer, the CDK stack
 * (`infra/`) and the local runner, so the three cannot drift. It must stay free
 * of AWS SDK and CDK imports: it is plain data and pure functions.
 */
import { createHash } from 'node:crypto';

export const attr = {
  pk: 'PK',
  sk: 'SK',
  gsi1pk: 'GSI1PK',
  gsi1sk: 'GSI1SK',
  /** The due index (`GSI2`): set on a live subscription only, so the index holds nothing else. */
  gsi2pk: 'GSI2PK',
  gsi2sk: 'GSI2SK',
  /** Epoch seconds; DynamoDB TTL removes expired sessions, idempotency records and webhook history. */
  ttl: 'expires_ttl',
} as const;

export const indexNames = {
  gsi1: 'GSI1',
  /** Live subscriptions by the end of their current period (`dueKeys`). */
  due: 'GSI2',
} as const;

export interface KeyAttribute {
  name: string;
  type: 'S';
}

export interface IndexDefinition {
  name: string;
  kind: 'global' | 'local';
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  /** What the index copies: every attribute (default), or only the keys (its readers fetch the items). */
  projection?: 'all' | 'keys';
}

/** The index's projection, as CloudFormation and DynamoDB name it. */
export const projectionTypeOf = (index: IndexDefinition): 'ALL' | 'KEYS_ONLY' =>
  index.projection === 'keys' ? 'KEYS_ONLY' : 'ALL';

const s = (name: string): KeyAttribute => ({ name, type: 'S' });

/**
 * The table's shape, read by `infra/` (CDK) and by the local runner (CreateTable).
 *
 * No local secondary index, ever: an LSI caps every partition key's item collection (the items
 * and their index entries) at 10 GB, and a table's LSIs cannot be removed, only the table replaced
 * (`npm run migrate:table`, docs/deploying.md). Wallet sorting, their one user, reads the
 * customer's partition instead (`shared/data/wallets.ts`).
 */
export const tableDefinition = {
  partitionKey: s(attr.pk),
  sortKey: s(attr.sk),
  timeToLiveAttribute: attr.ttl,
  /**
   * The table's stream carries each new item's image: the webhook relay reads the outbox from it
   * (inserts of `EVENT#` items only, `outboxStream`). NEW_IMAGE, because nothing reads an old one.
   */
  streamViewType: 'NEW_IMAGE',
  indexes: [
    { name: indexNames.gsi1, kind: 'global', partitionKey: s(attr.gsi1pk), sortKey: s(attr.gsi1sk) },
    {
      name: indexNames.due,
      kind: 'global',
      partitionKey: s(attr.gsi2pk),
      sortKey: s(attr.gsi2sk),
      // The clock reads the subscriptions themselves, strongly consistent: it needs only their keys.
      projection: 'keys',
    },
  ] satisfies IndexDefinition[],
} as const;

// ---------------------------------------------------------------------------
// Key builders. Every key in the table is built here and nowhere else.
// ---------------------------------------------------------------------------

export interface Key {
  PK: string;
  SK: string;
}

const same = (value: string): Key => ({ PK: value, SK: value });

/**
 * The partition-key prefix of each kind of partition. IAM grants name these partitions
 * (`shared/operations.ts`), so a prefix is written here once, for keys and policies alike.
 */
export const partitions = {
  organization: 'ORG#',
  user: 'USER#',
  token: 'TOKEN#',
  customer: 'CUSTOMER#',
  product: 'PRODUCT#',
  subscription: 'SUBSCRIPTION#',
  webhookEndpoint: 'WEBHOOK#',
  meter: 'METER#',
  oauthClient: 'OAUTHCLIENT#',
  /** Present while a client is live and has been issued tokens: read beside each OAuth access token. */
  oauthClientLive: 'CLIENTLIVE#',
  authorizationCode: 'OAUTHCODE#',
  /** One authorization (a consent and the tokens refreshed from it): a token family. */
  oauthGrant: 'OAUTHGRANT#',
  idempotency: 'IDEMPOTENCY#',
  organizationSlug: 'ORGSLUG#',
  userEmail: 'USEREMAIL#',
  /**
   * A customer's uniqueness guards, one partition per organization and value
   * (`keys.customerEmail`, `keys.customerExternalId`), so that no tenant's creates share one.
   */
  customerEmail: 'CUSTOMEREMAIL#',
  customerExternalId: 'CUSTOMEREXTERNAL#',
  /** Sorted lists of an organization's entities (`shared/data/listing.ts`), one partition per kind and organization. */
  customerList: 'LIST#CUSTOMER#',
  productList: 'LIST#PRODUCT#',
  meterList: 'LIST#METER#',
  subscriptionList: 'LIST#SUBSCRIPTION#',
  /** An organization's subscriptions of one customer, of one product, of one customer to one product. */
  subscriptionCustomerList: 'LIST#SUBSCRIPTION-CUSTOMER#',
  subscriptionProductList: 'LIST#SUBSCRIPTION-PRODUCT#',
  subscriptionCustomerProductList: 'LIST#SUBSCRIPTION-CUSTOMER-PRODUCT#',
  /** Shards of the due index's partition key (`dueKeys`). */
  due: 'DUE#',
  webhookEndpointList: 'LIST#WEBHOOK#',
  /** The outbox: one item per event, in the partition of the object it is about (`outboxKeys`). */
  event: 'EVENT#',
  /** One event for one endpoint (its `webhook-id`), with its delivery attempts. */
  webhookEvent: 'WHEVENT#',
  /** Delivery attempts, listed per organization and per endpoint (`shared/data/deliveries.ts`). */
  deliveryList: 'LIST#DELIVERY#',
  /** A cap's counter: how many of a kind an owner has (`shared/data/caps.ts`). */
  cap: 'CAP#',
  /** Request quota counters, per bucket, window and shard (`shared/data/quotas.ts`). */
  quota: 'QUOTA#',
  /**
   * A usage event (`shared/data/usage-events.ts`), keyed by its id, which is derived from
   * (organization, external_id): its own conditional put is the deduplication claim.
   */
  usageEvent: 'UEVENT#',
  /** An organization's events by timestamp, in 16 shards by event id: `GSI1` partitions, never base-table keys. */
  usageEventList: 'UEVLIST#',
  /** An organization's event names with their counts, in 16 shards by ingest request. */
  usageEventNames: 'UEVNAME#',
  /**
   * A customer meter (`shared/data/customer-meters.ts`): its item, its hour aggregates and the
   * distinct values of a `unique` meter, in one partition per (customer, meter).
   */
  customerMeter: 'CMETER#',
  /** An organization's customer meters by creation: `GSI1` partitions, never base-table keys. */
  customerMeterList: 'CMLIST#',
} as const;
export type Partition = keyof typeof partitions;

export type ListPartition =
  | 'customerList'
  | 'productList'
  | 'meterList'
  | 'subscriptionList'
  | 'subscriptionCustomerList'
  | 'subscriptionProductList'
  | 'subscriptionCustomerProductList'
  | 'webhookEndpointList'
  | 'deliveryList';

/** `dynamodb:LeadingKeys` pattern of a partition: `ORG#*`. */
export const leadingKeyPattern = (partition: Partition): string => `${partitions[partition]}*`;

/** The partition key of an owner, as written in `GSI1PK` (an owner's children) and in its own item. */
export const ownerKeys = {
  organization: (organizationId: string) => `${partitions.organization}${organizationId}`,
  user: (userId: string) => `${partitions.user}${userId}`,
  customer: (customerId: string) => `${partitions.customer}${customerId}`,
} as const;

export const keys = {
  organization: (organizationId: string): Key => same(ownerKeys.organization(organizationId)),
  user: (userId: string): Key => same(ownerKeys.user(userId)),
  membership: (organizationId: string, userId: string): Key => ({
    PK: ownerKeys.organization(organizationId),
    SK: `MEMBER#${userId}`,
  }),
  /** Personal access tokens, customer sessions and OAuth tokens, looked up by the SHA-256 of the secret. */
  token: (tokenHash: string): Key => same(`${partitions.token}${tokenHash}`),
  customer: (customerId: string): Key => same(ownerKeys.customer(customerId)),
  wallet: (customerId: string, walletId: string): Key => ({
    PK: ownerKeys.customer(customerId),
    SK: `WALLET#${walletId}`,
  }),
  /** Uniqueness guard: one wallet per customer, currency and wallet type. */
  walletSlot: (customerId: string, currency: string, walletType: string): Key => ({
    PK: ownerKeys.customer(customerId),
    SK: `WALLETSLOT#${currency}#${walletType}`,
  }),
  product: (productId: string): Key => same(`${partitions.product}${productId}`),
  subscription: (subscriptionId: string): Key => same(`${partitions.subscription}${subscriptionId}`),
  webhookEndpoint: (endpointId: string): Key => same(`${partitions.webhookEndpoint}${endpointId}`),
  meter: (meterId: string): Key => same(`${partitions.meter}${meterId}`),
  oauthClient: (clientId: string): Key => same(`${partitions.oauthClient}${clientId}`),
  oauthClientLive: (clientId: string): Key => same(`${partitions.oauthClientLive}${clientId}`),
  /** Authorization codes, looked up by the SHA-256 of the code. */
  authorizationCode: (codeHash: string): Key => same(`${partitions.authorizationCode}${codeHash}`),
  oauthGrant: (grantId: string): Key => same(`${partitions.oauthGrant}${grantId}`),
  idempotency: (scope: string, key: string): Key => same(`${partitions.idempotency}${scope}#${key}`),
  /** Uniqueness guards: an item whose key is the unique value. */
  organizationSlug: (slug: string): Key => same(`${partitions.organizationSlug}${slug}`),
  userEmail: (email: string): Key => same(`${partitions.userEmail}${email.toLowerCase()}`),
  /**
   * A customer's e-mail guard: `CUSTOMEREMAIL#<org>#<lowercase e-mail>` (`%<sha256>` in place of
   * `#<value>` past `GUARD_VALUE_MAX_BYTES`), a partition of its own per organization and address.
   */
  customerEmail: (organizationId: string, email: string): Key => ({
    PK: guardPartitionKey(partitions.customerEmail, organizationId, email.toLowerCase()),
    SK: GUARD_SORT_KEY,
  }),
  /** A customer's external-id guard: `CUSTOMEREXTERNAL#<org>#<id>` (case kept), as the e-mail's. */
  customerExternalId: (organizationId: string, externalId: string): Key => ({
    PK: guardPartitionKey(partitions.customerExternalId, organizationId, externalId),
    SK: GUARD_SORT_KEY,
  }),
  webhookEvent: (webhookEventId: string): Key => same(`${partitions.webhookEvent}${webhookEventId}`),
  /** A usage event (`shared/data/usage-events.ts`). */
  usageEvent: (eventId: string): Key => same(`${partitions.usageEvent}${eventId}`),
  /** A customer meter's own item (`shared/data/customer-meters.ts`). */
  customerMeter: (customerMeterId: string): Key => same(`${partitions.customerMeter}${customerMeterId}`),
  /** A cap's counter (`shared/data/caps.ts`): one small item per owner and kind. */
  cap: (kind: string, owner: string): Key => same(`${partitions.cap}${kind}#${owner}`),
  /** One shard of a quota bucket's counter for one window (`shared/data/quotas.ts`). */
  quota: (bucket: string, window: number, shard: number): Key =>
    same(`${partitions.quota}${bucket}#${window}#${shard}`),
  /** An attempt of a webhook event: per delivery round (a redelivery starts a new one), numbered. */
  deliveryAttempt: (webhookEventId: string, round: number, attempt: number): Key => ({
    PK: `${partitions.webhookEvent}${webhookEventId}`,
    SK: `ATTEMPT#${String(round).padStart(4, '0')}#${String(attempt).padStart(3, '0')}`,
  }),
  /**
   * A Redeliver request, written with the round it starts: its stream record is the relay's cue to
   * queue the round's first attempt (`relayStreamFilters.redelivery`).
   */
  redelivery: (webhookEventId: string, request: string): Key => ({
    PK: `${partitions.webhookEvent}${webhookEventId}`,
    SK: `${REDELIVERY_SORT_KEY_PREFIX}${request}`,
  }),
} as const;

/** The sort keys of Redeliver requests, in their webhook event's partition. */
export const REDELIVERY_SORT_KEY_PREFIX = 'REDELIVERY#';

/**
 * Outbox items live in one partition per object (`EVENT#SUBSCRIPTION#<id>`), sorted by time and by
 * their order within the change: DynamoDB Streams keeps the records of one partition key in write
 * order, so one object's events reach the relay in the order they happened.
 */
export const outboxKeys = {
  event: (subjectKind: string, subjectId: string, at: string, sequence: number, eventId: string): Key => ({
    PK: `${partitions.event}${subjectKind.toUpperCase()}#${subjectId}`,
    SK: `EVENT#${at}#${String(sequence).padStart(2, '0')}#${eventId}`,
  }),
} as const;

/**
 * Where a customer's guards were before they had partitions of their own: in the organization's
 * partition (`ORG#<org>` / `CUSTOMEREMAIL#<lowercase e-mail>`, `CUSTOMEREXTERNAL#<id>`). Read, and
 * released, until `npm run admin -- customer migrate-guards` has moved them (shared/data/customers.ts).
 */
export const legacyGuardKeys = {
  customerEmail: (organizationId: string, email: string): Key => ({
    PK: ownerKeys.organization(organizationId),
    SK: guardSortKey('CUSTOMEREMAIL', email.toLowerCase()),
  }),
  customerExternalId: (organizationId: string, externalId: string): Key => ({
    PK: ownerKeys.organization(organizationId),
    SK: guardSortKey('CUSTOMEREXTERNAL', externalId),
  }),
} as const;

/**
 * The organization item's marker that none of its customers' guards is left in `ORG#<org>`
 * (`legacyGuardKeys`): set when the organization is created, and by `customer migrate-guards` for
 * older ones once it has moved their last guard. Never removed.
 */
export const CUSTOMER_GUARDS_MIGRATED = { attribute: 'customer_guards', value: 'by_value' } as const;

/**
 * The organization item's markers that nothing of its customer, product or subscription lists is
 * left in their old, unsharded partitions (`LIST#CUSTOMER#<org>`, `LIST#PRODUCT#<org>[#…]`,
 * `LIST#SUBSCRIPTION#<org>` and `LIST#SUBSCRIPTION-PRODUCT#<org>#<product>`): a page of a marked
 * organization reads its 16 shards only (shared/data/list-markers.ts). One per list family, because
 * each family has its own migration (`customer migrate-lists`, `product migrate-lists`,
 * `subscription migrate-lists`), run on its own. Set when the organization is created, and by the
 * family's migration once its old partitions hold nothing. Never removed.
 */
export const LISTS_MIGRATED = {
  customers: { attribute: 'customer_lists', value: 'sharded' },
  products: { attribute: 'product_lists', value: 'sharded' },
  subscriptions: { attribute: 'subscription_lists', value: 'sharded' },
} as const;

/** A list family with an old, unsharded partition per organization (`LISTS_MIGRATED`). */
export type ListFamily = keyof typeof LISTS_MIGRATED;

/** The one sort key of a guard partition (`keys.customerEmail`): short, so the item stays small. */
export const GUARD_SORT_KEY = 'GUARD';

/** Longest unique value a guard's key holds as it is (a sort key holds at most 1024 bytes). */
export const GUARD_VALUE_MAX_BYTES = 512;

/**
 * `<prefix><org>#<value>`, or past `GUARD_VALUE_MAX_BYTES` bytes `<prefix><org>%<SHA-256 of the
 * value>`: an organization id never holds `#` or `%`, so no value kept as it is takes a hashed key.
 */
function guardPartitionKey(prefix: string, organizationId: string, value: string): string {
  return Buffer.byteLength(value, 'utf8') <= GUARD_VALUE_MAX_BYTES
    ? `${prefix}${organizationId}#${value}`
    : `${prefix}${organizationId}%${createHash('sha256').update(value, 'utf8').digest('hex')}`;
}

/**
 * `<KIND>#<value>`, or for a value of more than `GUARD_VALUE_MAX_BYTES` bytes of UTF-8 (an e-mail
 * address of 320 emoji is 1280) `<KIND>%<SHA-256 of the value>`: another separator, so that
 * no value kept as it is can take a hashed value's key.
 */
function guardSortKey(kind: string, value: string): string {
  return Buffer.byteLength(value, 'utf8') <= GUARD_VALUE_MAX_BYTES
    ? `${kind}#${value}`
    : `${kind}%${createHash('sha256').update(value, 'utf8').digest('hex')}`;
}

/**
 * A filtered view of an organization's list: filter names and values, in name order
 * (`[['is_archived', 'false']]`). The empty view is the whole list.
 */
export type ListView = readonly (readonly [name: string, value: string])[];

/** `LIST#PRODUCT#<org>` for the whole list, `LIST#PRODUCT#<org>#is_archived=false` for a view of it. */
const listPartitionKey = (partition: ListPartition, organizationId: string, view: ListView): string =>
  `${partitions[partition]}${organizationId}${view.map(([name, value]) => `#${name}=${value}`).join('')}`;

/** A list partition holds one entry per sort field of each entity, and the count of entities. */
export const listKeys = {
  entry: (partition: ListPartition, organizationId: string, sortKey: string, view: ListView = []): Key => ({
    PK: listPartitionKey(partition, organizationId, view),
    SK: sortKey,
  }),
  /** The list's partition key: the whole list, or one of its views. */
  partition: (partition: ListPartition, organizationId: string, view: ListView = []): string =>
    listPartitionKey(partition, organizationId, view),
  /**
   * One shard of the list's (or view's) count (`LIST_COUNT_SHARDS` of them, summed on read):
   * concurrent transactions that add to one item conflict, so a single count item would serialise
   * every create and delete of an organization's entities.
   */
  count: (partition: ListPartition, organizationId: string, shard: number, view: ListView = []): Key => ({
    PK: listPartitionKey(partition, organizationId, view),
    SK: `${LIST_COUNT_PREFIX}${shard}`,
  }),
  /** One shard of the count of one segment of a segmented list (`shared/data/listing.ts`). */
  segmentCount: (
    partition: ListPartition,
    owner: string,
    segment: string,
    shard: number,
    view: ListView = [],
  ): Key => ({
    PK: listPartitionKey(partition, owner, view),
    SK: `${LIST_COUNT_PREFIX}${segment}#${shard}`,
  }),
} as const;

/**
 * Owners of the narrower subscription lists: always under the organization, so that a customer or
 * product id of another organization names an empty list, never someone else's.
 */
export const subscriptionListOwners = {
  customer: (organizationId: string, customerId: string) => `${organizationId}#${customerId}`,
  product: (organizationId: string, productId: string) => `${organizationId}#${productId}`,
  customerProduct: (organizationId: string, customerId: string, productId: string) =>
    `${organizationId}#${customerId}#${productId}`,
} as const;

export const LIST_COUNT_PREFIX = '#COUNT#';
export const LIST_COUNT_SHARDS = 16;

/**
 * Shards of the due index: live subscriptions spread over this many index partitions by their id, so
 * that renewals and creations do not all write one index partition; the clock reads each shard.
 */
export const DUE_SHARDS = 4;

/**
 * The due index's keys of a live subscription: its shard, and the end of its current period (fixed
 * width, so byte order is time order) then its id. An ended subscription has none.
 */
export const dueKeys = (subscriptionId: string, periodEnd: string) => ({
  [attr.gsi2pk]: `${partitions.due}${Number.parseInt(subscriptionId.slice(0, 2), 16) % DUE_SHARDS}`,
  [attr.gsi2sk]: `${encodeTime(periodEnd)}#${subscriptionId}`,
});

/** The due index's partition key of one shard, and the sort key bound below which a subscription is due at `now`. */
export const dueIndex = {
  shard: (shard: number) => `${partitions.due}${shard}`,
  // '$' sorts after '#': a period ending exactly now is included.
  dueBefore: (now: string) => `${encodeTime(now)}$`,
} as const;

/** GSI1 groups an owner's children, newest last: `ORG#id` → products, webhooks (customers no longer: nothing read them); `USER#id` → tokens, clients. */
export const gsi1 = {
  ownedBy: (ownerKey: string, kind: string, createdAt: string, id: string) => ({
    GSI1PK: ownerKey,
    GSI1SK: `${kind}#${createdAt}#${id}`,
  }),
  ownerPrefix: (kind: string) => `${kind}#`,
} as const;

// ---------------------------------------------------------------------------
// Order-preserving encodings for sort keys.
// ---------------------------------------------------------------------------

/** Balances are integers in minor units; this is the range we can encode and order exactly. */
export const BALANCE_LIMIT = Number.MAX_SAFE_INTEGER;
const BALANCE_OFFSET = BigInt(BALANCE_LIMIT);
const BALANCE_WIDTH = String(2n * BALANCE_OFFSET).length;
const TIME_WIDTH = 15;
const TIME_MAX = 10 ** TIME_WIDTH - 1;

/** Encodes a safe integer as a fixed-width string whose lexical order is numeric order (negatives first). */
export function encodeBalance(balance: number): string {
  if (!Number.isSafeInteger(balance)) {
    throw new RangeError(`balance must be a safe integer, got ${balance}`);
  }
  // BigInt: balance + 2^53 is beyond float precision for positive balances.
  return String(BigInt(balance) + BALANCE_OFFSET).padStart(BALANCE_WIDTH, '0');
}

/** Epoch milliseconds, fixed width, so lexical order is chronological. */
export function encodeTime(isoTimestamp: string): string {
  const ms = Date.parse(isoTimestamp);
  if (!Number.isFinite(ms) || ms < 0 || ms > TIME_MAX) {
    throw new RangeError(`not an encodable timestamp: ${isoTimestamp}`);
  }
  return String(ms).padStart(TIME_WIDTH, '0');
}
