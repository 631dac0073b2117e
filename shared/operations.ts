/**
 * The route table: one entry per operation (= one Lambda function).
 *
 * Read by the CDK stack (routes, function entries, IAM grants) and by the local
 * runner (routing HTTP requests to the same handlers), so both serve exactly the
 * same routes. Plain data only: no SDK or CDK imports.
 */
import { indexNames, type Partition } from './data/table.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** DynamoDB actions a function may need; the stack grants exactly these. */
export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:Query'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:ConditionCheckItem';

/**
 * One IAM statement: these actions, on the table (or only on the named indexes), for items whose
 * partition key matches one of `leadingKeys` (`ForAllValues:StringLike dynamodb:LeadingKeys`).
 *
 * IAM evaluates a request against each statement on its own, and a BatchGetItem's leading keys are
 * all the partition keys it reads: a batch of PRODUCT#, CUSTOMER# and ORG# keys needs one statement
 * that allows all three prefixes. Reads and writes are separate grants so that reading an item
 * never implies writing it.
 */
export interface TableGrant {
  actions: readonly TableAction[];
  /** Partitions (`shared/data/table.ts` `partitions`), granted as `dynamodb:LeadingKeys` patterns `<prefix>*`. */
  leadingKeys: readonly Partition[];
  /** When set, the grant covers only these indexes (their ARNs), not the table itself. */
  indexes?: readonly string[];
}

export interface OperationDefinition {
  /** Folder under `functions/`, also the function's logical name. */
  name: string;
  /** The OpenAPI document's `operationId` (the official SDKs' method names derive from it). */
  operationId: string;
  method: HttpMethod;
  /** The path as the official clients call it (the OpenAPI key); the other trailing-slash spelling is served too. */
  path: string;
  /** Path relative to the repository root. */
  entry: string;
  /** Everything the function may do in the table; the stack grants exactly this. */
  access: readonly TableGrant[];
  /**
   * The function seals or opens webhook signing secrets: the stack grants it
   * `secretsmanager:GetSecretValue` on the webhook key set and passes the set's name
   * (`WEBHOOK_KEY_SET_ID_ENV`); locally only these functions are given the key set.
   */
  webhookKeySet?: true;
}

/** Authentication reads the token item on every request. */
const AUTHENTICATE: TableGrant = { actions: ['dynamodb:GetItem'], leadingKeys: ['token'] };
/**
 * An OAuth access token is read with its client's liveness item in one batch (shared/http/auth.ts):
 * every operation that takes a personal access token takes these tokens too.
 */
const AUTHENTICATE_OAUTH: TableGrant = {
  actions: ['dynamodb:BatchGetItem'],
  leadingKeys: ['token', 'oauthClientLive'],
};
/** `Idempotency-Key`: claim (put), complete (update), release after a failure (delete). */
const IDEMPOTENCY: TableGrant = {
  actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  leadingKeys: ['idempotency'],
};

/** A change's webhook events (the outbox: `shared/data/outbox.ts`), put in the change's own transaction. */
const OUTBOX: TableGrant = { actions: ['dynamodb:PutItem'], leadingKeys: ['event'] };

/** A customer found by its external id: that key range of each of the caller's organizations' lists. */
const CUSTOMER_BY_EXTERNAL_ID: TableGrant = { actions: ['dynamodb:Query'], leadingKeys: ['customerList'] };
/**
 * A customer changed in one transaction: the item (conditioned on being as read), the e-mail and
 * external-id guards that move (released and taken in the organization's partition), the list
 * entries rewritten, those whose sort key moved deleted, and its `customer.updated` event.
 */
const CUSTOMER_CHANGE: readonly TableGrant[] = [
  { actions: ['dynamodb:UpdateItem'], leadingKeys: ['customer'] },
  { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], leadingKeys: ['organization', 'customerList'] },
  OUTBOX,
];
/**
 * A customer soft-deleted in one transaction: the item, both guards, its list entries, the list's
 * count, and its `customer.deleted` event.
 */
const CUSTOMER_DELETE: readonly TableGrant[] = [
  { actions: ['dynamodb:UpdateItem'], leadingKeys: ['customer', 'customerList'] },
  { actions: ['dynamodb:DeleteItem'], leadingKeys: ['organization', 'customerList'] },
  OUTBOX,
];

/** The four lists every subscription is kept in (`shared/data/subscriptions.ts`). */
const SUBSCRIPTION_LISTS = [
  'subscriptionList',
  'subscriptionCustomerList',
  'subscriptionProductList',
  'subscriptionCustomerProductList',
] as const satisfies readonly Partition[];

/**
 * A subscription change and its relisting, in one transaction: the subscription's conditional update,
 * its list entries rewritten (deleted when their key moves), the list counts.
 */
const SUBSCRIPTION_CHANGE: readonly TableGrant[] = [
  { actions: ['dynamodb:UpdateItem'], leadingKeys: ['subscription', ...SUBSCRIPTION_LISTS] },
  { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], leadingKeys: SUBSCRIPTION_LISTS },
];

/**
 * A portal read of one subscription: the token and the product it embeds; one batch of the session's
 * customer (still live?), its organization and the subscription.
 */
const CUSTOMER_SUBSCRIPTION_READ: readonly TableGrant[] = [
  { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'product'] },
  { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'organization', 'subscription'] },
];

/**
 * A portal change (cancel at period end, uncancel) keeps the subscription active and its period:
 * its list entries are rewritten in place, never moved, so no list entry is deleted and no count
 * changes.
 */
const CUSTOMER_SUBSCRIPTION_CHANGE: readonly TableGrant[] = [
  { actions: ['dynamodb:UpdateItem'], leadingKeys: ['subscription'] },
  { actions: ['dynamodb:PutItem'], leadingKeys: SUBSCRIPTION_LISTS },
];

export const operations = [
  {
    name: 'create-client',
    operationId: 'createClient',
    method: 'POST',
    path: '/v1/oauth2/register',
    entry: 'functions/create-client/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      { actions: ['dynamodb:PutItem'], leadingKeys: ['oauthClient'] },
    ],
  },
  {
    name: 'authorize',
    operationId: 'authorize',
    method: 'GET',
    path: '/v1/oauth2/authorize',
    entry: 'functions/authorize/handler.ts',
    // One batch: the client the request names, the user and their organizations (what the consent shows).
    access: [
      AUTHENTICATE,
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['oauthClient', 'user', 'organization'] },
    ],
  },
  {
    name: 'consent',
    operationId: 'consent',
    method: 'POST',
    path: '/v1/oauth2/consent',
    entry: 'functions/consent/handler.ts',
    access: [
      AUTHENTICATE,
      IDEMPOTENCY,
      { actions: ['dynamodb:GetItem'], leadingKeys: ['oauthClient'] },
      { actions: ['dynamodb:PutItem'], leadingKeys: ['authorizationCode'] },
    ],
  },
  {
    name: 'request-token',
    operationId: 'requestToken',
    method: 'POST',
    path: '/v1/oauth2/token',
    entry: 'functions/request-token/handler.ts',
    access: [
      // Client authentication; the code or refresh token used; the family, when a replay revokes it.
      {
        actions: ['dynamodb:GetItem'],
        leadingKeys: ['oauthClient', 'authorizationCode', 'token', 'oauthGrant'],
      },
      // One transaction per issuance: the code or old refresh token spent, the family and its new
      // tokens written, the client re-checked and its liveness item written. A code that failed
      // its PKCE check is deleted alone.
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['authorizationCode'] },
      { actions: ['dynamodb:PutItem'], leadingKeys: ['oauthGrant', 'token', 'oauthClientLive'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['token', 'oauthGrant'] },
      { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['oauthClient'] },
    ],
  },
  {
    name: 'revoke-token',
    operationId: 'revokeToken',
    method: 'POST',
    path: '/v1/oauth2/revoke',
    entry: 'functions/revoke-token/handler.ts',
    access: [
      // The client, the token presented, and for a refresh token its grant.
      { actions: ['dynamodb:GetItem'], leadingKeys: ['oauthClient', 'token', 'oauthGrant'] },
      // An access token ended alone; a grant and its live tokens ended in one transaction.
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['token', 'oauthGrant'] },
    ],
  },
  {
    name: 'introspect-token',
    operationId: 'introspectToken',
    method: 'POST',
    path: '/v1/oauth2/introspect',
    entry: 'functions/introspect-token/handler.ts',
    access: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['oauthClient', 'token'] }],
  },
  {
    name: 'userinfo',
    operationId: 'userinfo',
    method: 'GET',
    path: '/v1/oauth2/userinfo',
    entry: 'functions/userinfo/handler.ts',
    // The token; then the user (email) or, for a token acting for an organization, the organization.
    access: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'user', 'organization'] },
      AUTHENTICATE_OAUTH,
    ],
  },
  {
    name: 'create-subscription',
    operationId: 'createSubscription',
    method: 'POST',
    path: '/v1/subscriptions/',
    entry: 'functions/create-subscription/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      // One batch reads the product, the customer and the caller's organizations (default currency).
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['product', 'customer', 'organization'] },
      // One transaction writes the subscription, lists it (entries, counts) and writes its events
      // (the outbox), and re-checks the customer and the product.
      { actions: ['dynamodb:PutItem'], leadingKeys: ['subscription', ...SUBSCRIPTION_LISTS, 'event'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: SUBSCRIPTION_LISTS },
      { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['product', 'customer'] },
    ],
  },
  {
    name: 'list-wallets',
    operationId: 'listWallets',
    method: 'GET',
    path: '/v1/customer-portal/wallets/',
    entry: 'functions/list-wallets/handler.ts',
    access: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'customer'] },
      {
        actions: ['dynamodb:Query'],
        leadingKeys: ['customer'],
        indexes: [
          indexNames.walletByCreated,
          indexNames.walletByBalanceCreated,
          indexNames.walletByBalanceCreatedDesc,
          indexNames.walletByBalance,
          indexNames.walletByBalanceDesc,
        ],
      },
    ],
  },
  {
    name: 'delete-webhook-endpoint',
    operationId: 'deleteWebhookEndpoint',
    method: 'DELETE',
    path: '/v1/webhooks/endpoints/{id}',
    entry: 'functions/delete-webhook-endpoint/handler.ts',
    access: [
      // The token and the endpoint; then one transaction marks it deleted, removes its list entries
      // and lowers the list's count.
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'webhookEndpoint'] },
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['webhookEndpointList'] },
    ],
  },
  {
    name: 'create-customer-session',
    operationId: 'createCustomerSession',
    method: 'POST',
    path: '/v1/customer-sessions/',
    entry: 'functions/create-customer-session/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      // One batch reads the customer (by id) or its external-id guards, and the caller's organizations
      // (for the portal URL's slug); a second batch reads the customer an external id names.
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'organization'] },
      // One transaction writes the session and re-checks that the customer is still live.
      { actions: ['dynamodb:PutItem'], leadingKeys: ['token'] },
      { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['customer'] },
    ],
  },
  {
    name: 'get-wallet',
    operationId: 'getWallet',
    method: 'GET',
    path: '/v1/customer-portal/wallets/{id}',
    entry: 'functions/get-wallet/handler.ts',
    // One batch reads the session's customer (still live?) and the wallet, both in its partition.
    access: [AUTHENTICATE, { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer'] }],
  },
  {
    name: 'get-product',
    operationId: 'getProduct',
    method: 'GET',
    path: '/v1/products/{id}',
    entry: 'functions/get-product/handler.ts',
    access: [AUTHENTICATE, AUTHENTICATE_OAUTH, { actions: ['dynamodb:GetItem'], leadingKeys: ['product'] }],
  },
  {
    name: 'get-subscription',
    operationId: 'getSubscription',
    method: 'GET',
    path: '/v1/subscriptions/{id}',
    entry: 'functions/get-subscription/handler.ts',
    access: [
      // The token and the subscription; then one batch of the customer and product it embeds.
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'subscription'] },
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'product'] },
    ],
  },
  {
    name: 'get-client',
    operationId: 'getClient',
    method: 'GET',
    path: '/v1/oauth2/register/{client_id}',
    entry: 'functions/get-client/handler.ts',
    // RFC 7592: the registration token is checked against the client item itself, so the one read
    // is the client (strongly consistent); no token item, no other partition.
    access: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['oauthClient'] }],
  },
  {
    name: 'update-client',
    operationId: 'updateClient',
    method: 'PUT',
    path: '/v1/oauth2/register/{client_id}',
    entry: 'functions/update-client/handler.ts',
    access: [{ actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['oauthClient'] }],
  },
  {
    name: 'delete-client',
    operationId: 'deleteClient',
    method: 'DELETE',
    path: '/v1/oauth2/register/{client_id}',
    entry: 'functions/delete-client/handler.ts',
    // One transaction: the client soft-deleted and its liveness item removed (its tokens stop at once).
    access: [
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['oauthClient'] },
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['oauthClientLive'] },
    ],
  },
  {
    name: 'update-subscription',
    operationId: 'updateSubscription',
    method: 'PATCH',
    path: '/v1/subscriptions/{id}',
    entry: 'functions/update-subscription/handler.ts',
    access: [
      // The token and the subscription; the conditional lifecycle write, its relisting and its
      // events (the outbox); the embedded customer and product, read beside the write.
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'subscription'] },
      AUTHENTICATE_OAUTH,
      ...SUBSCRIPTION_CHANGE,
      OUTBOX,
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'product'] },
    ],
  },
  {
    name: 'revoke-subscription',
    operationId: 'revokeSubscription',
    method: 'DELETE',
    path: '/v1/subscriptions/{id}',
    entry: 'functions/revoke-subscription/handler.ts',
    access: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'subscription'] },
      AUTHENTICATE_OAUTH,
      ...SUBSCRIPTION_CHANGE,
      OUTBOX,
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'product'] },
    ],
  },
  {
    name: 'create-customer',
    operationId: 'createCustomer',
    method: 'POST',
    path: '/v1/customers/',
    entry: 'functions/create-customer/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      // One transaction: the customer, its e-mail and external-id guards (in the organization's
      // partition), each created only if absent, its list entries and the list's count, and its
      // event (the outbox).
      { actions: ['dynamodb:PutItem'], leadingKeys: ['customer', 'organization', 'customerList', 'event'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['customerList'] },
    ],
  },
  {
    name: 'get-customer',
    operationId: 'getCustomer',
    method: 'GET',
    path: '/v1/customers/{id}',
    entry: 'functions/get-customer/handler.ts',
    access: [AUTHENTICATE_OAUTH, { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'customer'] }],
  },
  {
    name: 'list-customers',
    operationId: 'listCustomers',
    method: 'GET',
    path: '/v1/customers/',
    entry: 'functions/list-customers/handler.ts',
    // The count's shards and the page's entries (or a filter's key ranges) of each organization's list.
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:Query'], leadingKeys: ['customerList'] },
    ],
  },
  {
    name: 'get-customer-external',
    operationId: 'getCustomerExternal',
    method: 'GET',
    path: '/v1/customers/external/{external_id}',
    entry: 'functions/get-customer-external/handler.ts',
    // The external id's key range of each of the caller's organizations' customer lists.
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:Query'], leadingKeys: ['customerList'] },
    ],
  },
  {
    name: 'update-customer',
    operationId: 'updateCustomer',
    method: 'PATCH',
    path: '/v1/customers/{id}',
    entry: 'functions/update-customer/handler.ts',
    access: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'customer'] },
      AUTHENTICATE_OAUTH,
      ...CUSTOMER_CHANGE,
    ],
  },
  {
    name: 'update-customer-external',
    operationId: 'updateCustomerExternal',
    method: 'PATCH',
    path: '/v1/customers/external/{external_id}',
    entry: 'functions/update-customer-external/handler.ts',
    access: [AUTHENTICATE, AUTHENTICATE_OAUTH, CUSTOMER_BY_EXTERNAL_ID, ...CUSTOMER_CHANGE],
  },
  {
    name: 'delete-customer',
    operationId: 'deleteCustomer',
    method: 'DELETE',
    path: '/v1/customers/{id}',
    entry: 'functions/delete-customer/handler.ts',
    access: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'customer'] },
      AUTHENTICATE_OAUTH,
      ...CUSTOMER_DELETE,
    ],
  },
  {
    name: 'delete-customer-external',
    operationId: 'deleteCustomerExternal',
    method: 'DELETE',
    path: '/v1/customers/external/{external_id}',
    entry: 'functions/delete-customer-external/handler.ts',
    access: [AUTHENTICATE, AUTHENTICATE_OAUTH, CUSTOMER_BY_EXTERNAL_ID, ...CUSTOMER_DELETE],
  },
  {
    name: 'create-product',
    operationId: 'createProduct',
    method: 'POST',
    path: '/v1/products/',
    entry: 'functions/create-product/handler.ts',
    access: [
      // The token, and the organization (its default currency).
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'organization'] },
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      // One transaction: the product, its list entries (whole list and views), the lists' counts, and
      // its `product.created` event.
      { actions: ['dynamodb:PutItem'], leadingKeys: ['product', 'productList', 'event'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['productList'] },
    ],
  },
  {
    name: 'list-products',
    operationId: 'listProducts',
    method: 'GET',
    path: '/v1/products/',
    entry: 'functions/list-products/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      // Per organization: the count shards of its list (or view), then its entries; both queries.
      { actions: ['dynamodb:Query'], leadingKeys: ['productList'] },
    ],
  },
  {
    name: 'update-product',
    operationId: 'updateProduct',
    method: 'PATCH',
    path: '/v1/products/{id}',
    entry: 'functions/update-product/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      // One batch: the product and the caller's organizations (default currency).
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['product', 'organization'] },
      // One transaction: the product (conditioned on its version), its entries moved in step, and its
      // `product.updated` event.
      { actions: ['dynamodb:PutItem'], leadingKeys: ['product', 'productList', 'event'] },
      { actions: ['dynamodb:DeleteItem', 'dynamodb:UpdateItem'], leadingKeys: ['productList'] },
    ],
  },
  {
    name: 'create-webhook-endpoint',
    operationId: 'createWebhookEndpoint',
    method: 'POST',
    path: '/v1/webhooks/endpoints',
    entry: 'functions/create-webhook-endpoint/handler.ts',
    webhookKeySet: true,
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      // One transaction: the endpoint, its list entries (one per sort field) and the list's count.
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['webhookEndpointList'] },
    ],
  },
  {
    name: 'list-webhook-endpoints',
    operationId: 'listWebhookEndpoints',
    method: 'GET',
    path: '/v1/webhooks/endpoints',
    entry: 'functions/list-webhook-endpoints/handler.ts',
    webhookKeySet: true,
    // Per organization, one query of the list's count shards and one of its entries
    // (shared/data/listing.ts).
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:Query'], leadingKeys: ['webhookEndpointList'] },
    ],
  },
  {
    name: 'get-webhook-endpoint',
    operationId: 'getWebhookEndpoint',
    method: 'GET',
    path: '/v1/webhooks/endpoints/{id}',
    entry: 'functions/get-webhook-endpoint/handler.ts',
    webhookKeySet: true,
    access: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'webhookEndpoint'] },
      AUTHENTICATE_OAUTH,
    ],
  },
  {
    name: 'update-webhook-endpoint',
    operationId: 'updateWebhookEndpoint',
    method: 'PATCH',
    path: '/v1/webhooks/endpoints/{id}',
    entry: 'functions/update-webhook-endpoint/handler.ts',
    webhookKeySet: true,
    access: [
      // The token and the endpoint; then one transaction replaces the endpoint (on the revision
      // read) and its list entries, deleting the entries whose sort key moved (url, name).
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'webhookEndpoint'] },
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['webhookEndpointList'] },
    ],
  },
  {
    name: 'reset-webhook-endpoint-secret',
    operationId: 'resetWebhookEndpointSecret',
    method: 'PATCH',
    path: '/v1/webhooks/endpoints/{id}/secret',
    entry: 'functions/reset-webhook-endpoint-secret/handler.ts',
    webhookKeySet: true,
    access: [
      // The token and the endpoint; then the endpoint and its list entries (same keys) replaced.
      { actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'webhookEndpoint'] },
      AUTHENTICATE_OAUTH,
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
    ],
  },
  {
    name: 'list-subscriptions',
    operationId: 'listSubscriptions',
    method: 'GET',
    path: '/v1/subscriptions/',
    entry: 'functions/list-subscriptions/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      // Per list: one Query of its segment counts, one per segment read (shared/data/listing.ts).
      { actions: ['dynamodb:Query'], leadingKeys: SUBSCRIPTION_LISTS },
      // One batch of the customers and products the page embeds.
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'product'] },
    ],
  },
  {
    name: 'list-customer-subscriptions',
    operationId: 'listCustomerSubscriptions',
    method: 'GET',
    path: '/v1/customer-portal/subscriptions/',
    entry: 'functions/list-customer-subscriptions/handler.ts',
    access: [
      AUTHENTICATE,
      // The customer's list, or its lists per product: segment counts, then segments.
      {
        actions: ['dynamodb:Query'],
        leadingKeys: ['subscriptionCustomerList', 'subscriptionCustomerProductList'],
      },
      // The customer (still live?), its organization and the page's products, in one batch.
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'organization', 'product'] },
    ],
  },
  {
    name: 'get-customer-subscription',
    operationId: 'getCustomerSubscription',
    method: 'GET',
    path: '/v1/customer-portal/subscriptions/{id}',
    entry: 'functions/get-customer-subscription/handler.ts',
    access: [...CUSTOMER_SUBSCRIPTION_READ],
  },
  {
    name: 'cancel-customer-subscription',
    operationId: 'cancelCustomerSubscription',
    method: 'DELETE',
    path: '/v1/customer-portal/subscriptions/{id}',
    entry: 'functions/cancel-customer-subscription/handler.ts',
    access: [...CUSTOMER_SUBSCRIPTION_READ, ...CUSTOMER_SUBSCRIPTION_CHANGE, OUTBOX],
  },
  {
    name: 'update-customer-subscription',
    operationId: 'updateCustomerSubscription',
    method: 'PATCH',
    path: '/v1/customer-portal/subscriptions/{id}',
    entry: 'functions/update-customer-subscription/handler.ts',
    access: [...CUSTOMER_SUBSCRIPTION_READ, ...CUSTOMER_SUBSCRIPTION_CHANGE, OUTBOX],
  },
  {
    name: 'list-webhook-deliveries',
    operationId: 'listWebhookDeliveries',
    method: 'GET',
    path: '/v1/webhooks/deliveries',
    entry: 'functions/list-webhook-deliveries/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      // Per list (the organization's, or an endpoint's; or their view by outcome): its count's
      // shards, then its entries; both queries.
      { actions: ['dynamodb:Query'], leadingKeys: ['deliveryList'] },
    ],
  },
  {
    name: 'redeliver-webhook-event',
    operationId: 'redeliverWebhookEvent',
    method: 'POST',
    path: '/v1/webhooks/events/{id}/redeliver',
    entry: 'functions/redeliver-webhook-event/handler.ts',
    access: [
      AUTHENTICATE,
      AUTHENTICATE_OAUTH,
      IDEMPOTENCY,
      // One transaction: the event's next delivery round (its organization one of the caller's) and
      // the request's redelivery item, from which the relay queues the round's first attempt.
      { actions: ['dynamodb:UpdateItem', 'dynamodb:PutItem'], leadingKeys: ['webhookEvent'] },
    ],
  },
] as const satisfies readonly OperationDefinition[];

/**
 * A function no route reaches: a schedule invokes it. Its table grants are judged like an
 * operation's (IAM scenario and mutations keyed by its name).
 */
export interface ScheduledFunctionDefinition {
  name: string;
  entry: string;
  /** EventBridge schedule expression. */
  schedule: string;
  /** Longer than an operation's 10 s: a run works through batches while time is left. */
  timeoutSeconds: number;
  access: readonly TableGrant[];
}

export const scheduledFunctions = [
  {
    name: 'subscription-clock',
    entry: 'functions/subscription-clock/handler.ts',
    // Every minute: a period ends at most about a minute late, and a missed or failed run is
    // simply taken up by the next (each change is conditioned on the state it was decided on).
    schedule: 'rate(1 minute)',
    timeoutSeconds: 60,
    access: [
      // Each shard of the due index (keys only), then the due subscriptions in one batch.
      { actions: ['dynamodb:Query'], leadingKeys: ['due'], indexes: [indexNames.due] },
      // The due subscriptions in one batch, then their customers and products (the events embed them).
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['subscription', 'customer', 'product'] },
      // A renewal moves the `current_period_end` entries; an end moves all of them between segments;
      // either writes its events (the outbox).
      ...SUBSCRIPTION_CHANGE,
      OUTBOX,
    ],
  },
] as const satisfies readonly ScheduledFunctionDefinition[];

export type ScheduledFunctionName = (typeof scheduledFunctions)[number]['name'];

export type OperationName = (typeof operations)[number]['name'];

/**
 * The webhook pipeline's functions, behind no route: the relay (triggered by the table's stream) and
 * the deliverer (triggered by the delivery queue). Their table grants are judged like the operations'.
 */
export const pipelineFunctions = [
  {
    name: 'webhook-relay',
    entry: 'functions/webhook-relay/handler.ts',
    access: [
      // The organization's endpoints, from its endpoint list; one webhook event per target. A
      // Redeliver request: its event's round, in one batch. An expired delivery list entry: a
      // tombstone and the list's count down, in one transaction.
      { actions: ['dynamodb:Query'], leadingKeys: ['webhookEndpointList'] },
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent'] },
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEvent', 'deliveryList'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['deliveryList'] },
    ],
  },
  {
    name: 'webhook-deliverer',
    entry: 'functions/webhook-deliverer/handler.ts',
    access: [
      // The webhook event and its endpoint in one batch (the endpoint again after a lost race); one
      // transaction of the event's new state, the attempt, its list entries and counts and, when the
      // attempt changes the endpoint's health, the endpoint and its list entries.
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['webhookEvent', 'webhookEndpoint'] },
      {
        actions: ['dynamodb:PutItem'],
        leadingKeys: ['webhookEvent', 'deliveryList', 'webhookEndpoint', 'webhookEndpointList'],
      },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['webhookEvent', 'deliveryList'] },
    ],
    // Opens the endpoint's signing secrets.
    webhookKeySet: true,
  },
] as const satisfies readonly {
  name: string;
  entry: string;
  access: readonly TableGrant[];
  webhookKeySet?: true;
}[];
export type PipelineFunctionName = (typeof pipelineFunctions)[number]['name'];
export type OperationId = (typeof operations)[number]['operationId'];

/** The route table's entry for an OpenAPI operation id. */
export const operationById = (operationId: OperationId) =>
  operations.find((operation) => operation.operationId === operationId) as (typeof operations)[number];

/**
 * The function behind the HTTP API's `$default` route: it answers every request no operation route
 * takes, with the contract's 404 (unknown path) or 405 (known path, another method). It touches no
 * table.
 */
export const routeNotFound = {
  name: 'route-not-found',
  entry: 'functions/route-not-found/handler.ts',
} as const;

/**
 * The API reference, served by one function that touches no table and reads no credential:
 * `GET /openapi.json` (the document the validators are generated from) and `GET /docs` (Swagger UI,
 * with its assets under `/docs/`, bundled into the function: no CDN).
 */
export const apiReference = {
  name: 'api-reference',
  entry: 'functions/api-reference/handler.ts',
  routes: [
    { method: 'GET', path: '/openapi.json' },
    { method: 'GET', path: '/docs' },
  ],
} as const;

/**
 * OAuth 2.0 authorization server metadata (RFC 8414) and its OpenID Connect Discovery twin, at the
 * API's root as both specifications place them (outside `/v1` and outside the OpenAPI document, like
 * the reference). One function that touches no table and reads no credential.
 */
export const oauthDiscovery = {
  name: 'oauth-discovery',
  entry: 'functions/oauth-discovery/handler.ts',
  routes: [
    { method: 'GET', path: '/.well-known/oauth-authorization-server' },
    { method: 'GET', path: '/.well-known/openid-configuration' },
  ],
} as const;

/** A function behind routes that are not operations of the OpenAPI document: no table, no credential. */
export interface DocumentFunction {
  name: string;
  entry: string;
  routes: readonly { method: HttpMethod; path: string }[];
}

export const documentFunctions: readonly DocumentFunction[] = [apiReference, oauthDiscovery];

/** Every path-and-method the HTTP API routes to a function (operations, reference, discovery), for 405s. */
export const routedPaths: readonly { method: string; path: string }[] = [
  ...operations,
  ...documentFunctions.flatMap((fn) => fn.routes),
];

/** Whether a function (an operation's, or the pipeline's) is given the webhook key set. */
export const usesWebhookKeySet = (name: string): boolean =>
  [...operations, ...pipelineFunctions].some(
    (definition) => definition.name === name && 'webhookKeySet' in definition,
  );
