/**
 * Demo-shaped data for the benchmarks that do not use DynamoDB Local (cold start against a stub
 * endpoint, warm overhead against an in-memory fake): the same records the operator commands
 * write (scripts/admin/commands.ts), turned into table items with the data layer's own `item`,
 * `keys` and `gsi1`, and the ids and credentials the cards' sample requests name
 * (test/cards/<operation>.ts; their events: test/bench/samples.ts).
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { routeRequest, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import {
  customerMeterId,
  hourOf,
  storedCustomerMeter,
  storedHourAggregate,
} from '#shared/data/customer-meters.ts';
import { customerEntry, customerListing, customerListShard } from '#shared/data/customers.ts';
import { countShard, listedWrites } from '#shared/data/listing.ts';
import { type MeterRecord, meterItem, meterListing, storedMeter } from '#shared/data/meters.ts';
import { productListing } from '#shared/data/products.ts';
import {
  type CustomerRecord,
  type CustomerSessionRecord,
  item,
  type OAuthClientRecord,
  type OrganizationRecord,
  type PersonalAccessTokenRecord,
  type ProductRecord,
  storedProduct,
  type WalletRecord,
  type WebhookEndpointRecord,
} from '#shared/data/records.ts';
import { CUSTOMER_GUARDS_MIGRATED, gsi1, keys, listKeys } from '#shared/data/table.ts';
import { storedUsageEvent, usageEventId } from '#shared/data/usage-events.ts';
import { webhookEndpointListing } from '#shared/data/webhooks.ts';
import { parseKeySet, staticKeyring } from '#shared/domain/keyring.ts';
import { ALL_SCOPES, CUSTOMER_SESSION_SCOPE } from '#shared/domain/scopes.ts';
import { seal } from '#shared/domain/secret-box.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import type { WebhookSettings } from '#shared/runtime.ts';
import { DEPLOYED_ADDRESS_POLICY } from '#shared/webhooks/address-policy.ts';

/** Fixed ids and secrets so every process (parent, cold-start children) agrees on the data. */
const ORG = '0b5c3f57-1f0e-4d0a-9d43-5b0a3c6d7e01';
const USER = '1c6d4068-2a1f-4e1b-8e54-6c1b4d7e8f02';
export const CUSTOMER = '2d7e5179-3b20-4f2c-9f65-7d2c5e8f9003';
export const PRODUCT = '3e8f628a-4c31-4a3d-8a76-8e3d6f90a104';
export const WEBHOOK = '4f90739b-5d42-4b4e-9b87-9f4e70a1b205';
export const METER = '5b1295bd-6f64-4d60-9da9-a16092c3d4aa';
/** The fixture customer's meter of `METER` (Get Customer Meter), as the meter aggregator keeps it. */
export const CUSTOMER_METER = customerMeterId(CUSTOMER, METER);
export const UNKNOWN_ID = '5a0184ac-6e53-4c5f-8c98-a05f81b2c306';

export const PAT = `polar_pat_${'B'.repeat(48)}`;
/** An OAuth client of the fixture user, and its RFC 7592 registration access token. */
export const CLIENT_ID = `polar_ci_${'D'.repeat(48)}`;
export const REGISTRATION_TOKEN = `polar_crt_${'E'.repeat(48)}`;
export const CLIENT_SECRET = `polar_cs_${'G'.repeat(48)}`;
export const OTHER_REGISTRATION_TOKEN = `polar_crt_${'F'.repeat(48)}`;
/** The registration the fixture client keeps (Update Client sends it back unchanged). */
export const CLIENT_REGISTRATION = {
  redirect_uris: ['https://app.example.com/callback'],
  token_endpoint_auth_method: 'client_secret_post',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  scope: 'openid email',
  client_name: 'Bench client',
  default_sub_type: 'organization',
} as const;
export const SESSION = `polar_cst_${'C'.repeat(48)}`;
/** A fixed webhook key set, so that every process opens the fixture endpoint's secret (the SAM suite stores it in its Secrets Manager). */
export const KEY_SET = JSON.stringify({ current: 'k1', k1: 'H'.repeat(64) });
export const benchWebhooks: WebhookSettings = {
  keyring: staticKeyring(KEY_SET),
  addresses: DEPLOYED_ADDRESS_POLICY,
};
/** A webhook event of the fixture endpoint (Redeliver; the fake table answers its write as done). */
export const WEBHOOK_EVENT = '6a1f3c2e-9b8d-4e7f-a6c5-b4d3e2f1a0b9';
/** A usage event of the fixture customer (Get Event), as Ingest Events stores one. */
export const USAGE_EVENT = usageEventId(ORG, 'bench-event');
/** The fixture customer's external id. */
export const EXTERNAL_ID = 'bench-ada';
/** An authorization request of the fixture client (PKCE S256). */
export const AUTHORIZATION_QUERY = new URLSearchParams({
  response_type: 'code',
  client_id: CLIENT_ID,
  redirect_uri: CLIENT_REGISTRATION.redirect_uris[0],
  scope: 'openid email',
  state: 'bench',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
  code_challenge_method: 'S256',
}).toString();

const at = (minutesAgo: number) => new Date(Date.UTC(2026, 0, 1) - minutesAgo * 60_000).toISOString();
const FAR_FUTURE = '2999-01-01T00:00:00.000Z';

/** The fixture customer's first wallet (see `fixtureItems`). */
export const WALLET = '9e45c8e0-a297-4a93-9adc-000000000000';

export const fixture = {
  organizationId: ORG,
  customerId: CUSTOMER,
  productId: PRODUCT,
  webhookId: WEBHOOK,
};

/** Every item of the demo-shaped table, by `PK\u0000SK`. */
export function fixtureItems(): Record<string, unknown>[] {
  const organization: OrganizationRecord = {
    id: ORG,
    name: 'Bench Org',
    slug: 'bench-org',
    default_currency: 'eur',
    created_at: at(10_000),
    modified_at: null,
  };
  const pat: PersonalAccessTokenRecord = {
    kind: 'personal_access_token',
    token_id: '6b1295bd-7f64-4d60-9da9-b16092c3d407',
    user_id: USER,
    organization_ids: [ORG],
    scope: ALL_SCOPES.join(' '),
    comment: '',
    created_at: at(9_000),
    expires_at: null,
    revoked_at: null,
  };
  const session: CustomerSessionRecord = {
    kind: 'customer_session',
    token_id: '7c23a6ce-8075-4e71-aeba-c271a3d4e508',
    customer_id: CUSTOMER,
    organization_id: ORG,
    scope: CUSTOMER_SESSION_SCOPE,
    created_at: at(60),
    expires_at: FAR_FUTURE,
    revoked_at: null,
  };
  const balances = [2500, 0, -1200, 2500, 10_000, 75, 990, -5, 123_456, 4000, 1, 60_000, 300, 42];
  const customer: CustomerRecord = {
    id: CUSTOMER,
    organization_id: ORG,
    created_at: at(8_000),
    modified_at: null,
    metadata: {},
    external_id: EXTERNAL_ID,
    email: 'ada@example.com',
    email_verified: false,
    type: 'individual',
    name: 'Ada',
    billing_name: null,
    billing_address: null,
    tax_id: null,
    locale: null,
    deleted_at: null,
    wallet_count: balances.length,
  };
  const meter: MeterRecord = {
    id: METER,
    organization_id: ORG,
    name: 'API calls',
    unit: 'scalar',
    custom_label: null,
    custom_multiplier: null,
    filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: 'api.call' }] },
    aggregation: { func: 'count' },
    metadata: {},
    created_at: at(6_500),
    modified_at: null,
    archived_at: null,
    archived_periods: [],
    last_billed_event_id: null,
    definition_version: 1,
    version: 1,
  };
  const product: ProductRecord = {
    id: PRODUCT,
    organization_id: ORG,
    created_at: at(7_000),
    modified_at: null,
    name: 'Free',
    description: null,
    visibility: 'public',
    recurring_interval: 'month',
    recurring_interval_count: 1,
    is_archived: false,
    metadata: {},
    prices: [
      {
        id: '8d34b7df-9186-4f82-8fcb-d382b4e5f609',
        created_at: at(7_000),
        modified_at: null,
        amount_type: 'fixed',
        price_currency: 'eur',
        price_amount: 0,
        is_archived: false,
      },
    ],
    deleted_at: null,
  };
  // Listed in its shard of the list and no GSI1 keys, as Create Product writes it.
  const listedProduct = storedProduct({ ...product, list_layout: 'sharded' });
  const webhook: WebhookEndpointRecord = {
    id: WEBHOOK,
    organization_id: ORG,
    url: 'https://hooks.example.com/polar',
    name: null,
    format: 'raw',
    secret_ciphertext: `k1.${seal(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, parseKeySet(KEY_SET).keys.get('k1') as Buffer, WEBHOOK)}`,
    previous_secret_ciphertext: null,
    previous_secret_expires_at: null,
    events: ['subscription.created'],
    enabled: true,
    disabled_reason: null,
    failure_count: 0,
    created_at: at(6_000),
    modified_at: null,
    deleted_at: null,
    revision: 1,
  };
  // The endpoint's entries in its organization's list, and the list's count (shared/data/listing.ts).
  const webhookEntries = Object.keys(webhookEndpointListing.fields).map((field) => {
    const [put] = listedWrites({ name: 'bench' } as never, webhookEndpointListing, webhook).filter(
      (write) => 'Put' in write && String(write.Put.Item.SK).startsWith(`${field}#`),
    );
    return (put as { Put: { Item: Record<string, unknown> } }).Put.Item;
  });
  const currencies = ['usd', 'eur', 'gbp', 'jpy', 'chf', 'cad', 'aud'];
  const wallets: WalletRecord[] = balances.map((balance, i) => ({
    id: `9e45c8e0-a297-4a93-9adc-${String(i).padStart(12, '0')}`,
    customer_id: CUSTOMER,
    organization_id: ORG,
    wallet_type: i % 2 === 0 ? 'usage' : 'billing',
    currency: currencies[Math.floor(i / 2)] as string,
    balance,
    created_at: at(120 - i),
    modified_at: null,
  }));
  // The customer's entries in its organization's list and the list's count, as Create Customer writes them.
  const entries = listedWrites(
    { name: 'bench', doc: undefined as never },
    customerListing,
    customerEntry(customer),
  ).flatMap((write) => ('Put' in write ? [write.Put.Item] : []));
  return [
    ...entries,
    {
      ...listKeys.count('customerList', customerListShard(ORG, CUSTOMER), countShard(CUSTOMER)),
      entry_count: 1,
    },
    // Its uniqueness guards, as Create Customer takes them (a deletion releases them).
    { ...keys.customerEmail(ORG, customer.email as string), entity: 'customer_guard', customer_id: CUSTOMER },
    { ...keys.customerExternalId(ORG, EXTERNAL_ID), entity: 'customer_guard', customer_id: CUSTOMER },
    ...webhookEntries,
    { ...listKeys.count('webhookEndpointList', ORG, countShard(WEBHOOK)), entry_count: 1 },
    // Born with its customers' guards in their own partitions, as insertOrganization writes it.
    item(keys.organization(ORG), 'organization', {
      ...organization,
      [CUSTOMER_GUARDS_MIGRATED.attribute]: CUSTOMER_GUARDS_MIGRATED.value,
    }),
    item(
      {
        ...keys.token(hashSecret(PAT)),
        ...gsi1.ownedBy(`USER#${USER}`, 'TOKEN', pat.created_at, pat.token_id),
      },
      'token',
      pat,
    ),
    item(
      {
        ...keys.token(hashSecret(SESSION)),
        ...gsi1.ownedBy(`CUSTOMER#${CUSTOMER}`, 'TOKEN', session.created_at, session.token_id),
      },
      'token',
      session,
    ),
    item(
      keys.customer(CUSTOMER),
      'customer',
      // Listed in its shard of the list, its guards in their own partitions and no GSI1 keys, as
      // Create Customer writes it.
      { ...customer, list_layout: 'sharded', guard_layout: 'by_value' },
    ),
    item(keys.product(PRODUCT), 'product', listedProduct),
    // Its list entries and the lists' count shards, as Create Product writes them.
    ...listedWrites({ name: 'bench', doc: undefined as never }, productListing, listedProduct).map((write) =>
      'Put' in write
        ? write.Put.Item
        : { ...(write as { Update: { Key: object } }).Update.Key, entity: 'list_count', entry_count: 1 },
    ),
    // A meter and its list entries, as Create Meter writes them.
    meterItem(storedMeter(meter)),
    ...listedWrites({ name: 'bench', doc: undefined as never }, meterListing, storedMeter(meter)).map(
      (write) =>
        'Put' in write
          ? write.Put.Item
          : { ...(write as { Update: { Key: object } }).Update.Key, entity: 'list_count', entry_count: 1 },
    ),
    item(
      {
        ...keys.webhookEndpoint(WEBHOOK),
        ...gsi1.ownedBy(`ORG#${ORG}`, 'WEBHOOK', webhook.created_at, WEBHOOK),
      },
      'webhook_endpoint',
      webhook,
    ),
    ...wallets.map((wallet) => item(keys.wallet(CUSTOMER, wallet.id), 'wallet', wallet)),
    // The fixture customer's meter of METER, with one hour of usage (3 calls), as the aggregator writes them.
    storedCustomerMeter({
      id: CUSTOMER_METER,
      organization_id: ORG,
      customer_id: CUSTOMER,
      meter_id: METER,
      created_at: at(30),
    }),
    storedHourAggregate(
      { organization_id: ORG, customer_id: CUSTOMER, meter_id: METER },
      {
        customer_meter_id: CUSTOMER_METER,
        hour: hourOf(at(30)),
        state: { func: 'count', count: 3 },
        applied: { 'shardId-00000001700000000000-0000000a': `${'0'.repeat(39)}1` },
        definition_version: 1,
        version: 1,
        updated_at: at(30),
      },
    ),
    storedUsageEvent({
      id: USAGE_EVENT,
      organization_id: ORG,
      name: 'api_call',
      timestamp_us: Date.parse(at(30)) * 1000,
      external_id: 'bench-event',
      customer_id: CUSTOMER,
      external_customer_id: null,
      metadata: JSON.stringify({ tokens: 12 }),
      ingest_request: '0b1d2c3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e',
      ingested_at: at(30),
    }),
    item(
      {
        ...keys.oauthClient(CLIENT_ID),
        ...gsi1.ownedBy(`USER#${USER}`, 'OAUTHCLIENT', at(5_000), CLIENT_ID),
      },
      'oauth_client',
      {
        client_id: CLIENT_ID,
        client_secret_hash: hashSecret(CLIENT_SECRET),
        registration_token_hash: hashSecret(REGISTRATION_TOKEN),
        client_id_issued_at: Math.floor(Date.parse(at(5_000)) / 1000),
        client_secret_expires_at: 0,
        registration: { ...CLIENT_REGISTRATION },
        created_by_user_id: USER,
        created_at: at(5_000),
        modified_at: null,
        deleted_at: null,
      } satisfies OAuthClientRecord,
    ),
  ];
}

/** An API Gateway payload-2.0 event, built by the local runner's adapter (as `npm start` does). */
export function buildEvent(
  method: string,
  url: string,
  options: {
    token?: string;
    body?: unknown;
    form?: Record<string, string>;
    headers?: Record<string, string>;
  } = {},
): APIGatewayProxyEventV2 {
  const path = url.split('?')[0] as string;
  const match = routeRequest(method, path);
  if (!match) throw new Error(`no route for ${method} ${path}`);
  const headers: Record<string, string> = { host: 'api.bench', 'user-agent': 'bench', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body = Buffer.alloc(0);
  if (options.body !== undefined) {
    body = Buffer.from(JSON.stringify(options.body));
    headers['content-type'] = 'application/json';
  }
  if (options.form !== undefined) {
    body = Buffer.from(new URLSearchParams(options.form).toString());
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  return toApiGatewayEvent(
    {
      method,
      url,
      httpVersion: '1.1',
      rawHeaders: Object.entries(headers).flat(),
      socket: { remoteAddress: '127.0.0.1' },
    },
    body,
    { routeKey: match.routeKey, pathParameters: match.pathParameters },
  );
}

/** An access token of the fixture client's shape that was never issued. */
export const UNKNOWN_ACCESS_TOKEN = `polar_at_o_${'J'.repeat(48)}_${CLIENT_ID.slice('polar_ci_'.length)}`;
