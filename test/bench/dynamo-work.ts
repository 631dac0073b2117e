/**
 * 2. DynamoDB work per request: every operation through its real handler against DynamoDB Local,
 * with a client middleware that injects `ReturnConsumedCapacity: 'TOTAL'` into every command and
 * records round trips and consumed capacity (see `CapacityMeter`).
 */
import { createHash } from 'node:crypto';
import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { type OperationName, operations } from '#shared/operations.ts';
import { UNKNOWN_ID } from './fixture.ts';
import type { LocalWorld, MeteredCall } from './local-table.ts';
import { fmt, mean, median, type SectionResult, verdict } from './report.ts';

export interface OperationWork {
  key: string;
  label: string;
  operation: OperationName;
  status: number;
  roundTrips: number;
  target: number | undefined;
  /** Mean read and write request units per request (failed conditional writes counted as 1 WRU). */
  rru: number;
  wru: number;
  failedWrites: number;
  /** Median time of one DynamoDB round trip (DynamoDB Local, loopback), and of the whole request. */
  roundTripMs: number;
  requestMs: number;
  /** Whether the case applies (the idempotency cases need the header to work). */
  available: boolean;
}

interface Case {
  key: string;
  label: string;
  operation: OperationName;
  status: number;
  target?: number;
  /** Sends one request; `i` numbers the repetitions. */
  send(world: LocalWorld, i: number): Promise<{ status: number; body: string | undefined }>;
  /** Work before each measured request that must not be counted (e.g. creating the endpoint to delete). */
  prepare?(world: LocalWorld, i: number): Promise<unknown>;
}

const registration = { client_name: 'Bench', redirect_uris: ['https://app.example.com/callback'] };
const run = Date.now().toString(36);

const createClient = (world: LocalWorld, key?: string) =>
  world.call('create-client', 'POST', '/v1/oauth2/register', {
    token: world.demo.personal_access_token,
    body: registration,
    ...(key ? { headers: { 'Idempotency-Key': key } } : {}),
  });

const createSubscription = (world: LocalWorld, key?: string) =>
  world.call('create-subscription', 'POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
    ...(key ? { headers: { 'Idempotency-Key': key } } : {}),
  });

const endpointsToDelete: string[] = [];
const subscriptionsToChange: string[] = [];
const customersToChange: { id: string; externalId: string }[] = [];

/** A change or delete of a fresh customer (made in the uncounted `prepare` step), by id or external id. */
function customerChangeCase(
  operation: 'update-customer' | 'update-customer-external' | 'delete-customer' | 'delete-customer-external',
  label: string,
  by: 'id' | 'external',
): Case {
  const update = operation.startsWith('update');
  return {
    key: operation,
    label,
    operation,
    status: update ? 200 : 204,
    target: 3,
    prepare: async (world, i) => {
      customersToChange[i] = await freshCustomer(world, i);
    },
    send: (world, i) => {
      const customer = customersToChange[i];
      const path = by === 'id' ? customer?.id : `external/${customer?.externalId}`;
      return world.call(operation, update ? 'PATCH' : 'DELETE', `/v1/customers/${path}`, {
        token: world.demo.personal_access_token,
        ...(update
          ? { body: { email: `bench-moved+${run}-${operation}-${i}@example.com`, name: 'Moved' } }
          : {}),
      });
    },
  };
}

/** A customer to change or delete, through Create Customer (not counted: a `prepare` step). */
async function freshCustomer(world: LocalWorld, i: number): Promise<{ id: string; externalId: string }> {
  const externalId = `bench-change-${run}-${i}-${Math.random().toString(36).slice(2)}`;
  const reply = await world.call('create-customer', 'POST', '/v1/customers/', {
    token: world.demo.personal_access_token,
    body: { email: `${externalId}@example.com`, name: 'Bench', external_id: externalId },
  });
  return { id: JSON.parse(reply.body ?? '{}').id, externalId };
}

/** Subscriptions of the demo customer, one per repetition, for the portal's changes. */
const portalSubscriptions: string[] = [];

/** A fresh client per repetition (RFC 7592 cases), registered outside the measured request. */
const registrations: { client_id: string; registration_access_token: string }[] = [];
async function registered(world: LocalWorld) {
  const reply = await createClient(world);
  if (reply.status !== 201 || !reply.body) throw new Error(`Create Client answered ${reply.status}`);
  return JSON.parse(reply.body) as { client_id: string; registration_access_token: string };
}
const registrationCall = (
  world: LocalWorld,
  name: 'get-client' | 'update-client' | 'delete-client',
  method: string,
  i: number,
) => {
  const client = registrations[i];
  if (!client) throw new Error('no registration prepared');
  return world.call(name, method, `/v1/oauth2/register/${client.client_id}`, {
    token: client.registration_access_token,
    ...(method === 'PUT' ? { body: { ...registration, client_id: client.client_id } } : {}),
  });
};
let walletToGet = '';

/** Codes issued by the consent a Request Token repetition prepares, with their verifiers. */
const codes: { code: string; verifier: string }[] = [];
const pkceOf = (i: number) => {
  const verifier = `bench-verifier-${run}-${i}`.padEnd(43, 'v');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** The demo client's credentials, in the form (it registered client_secret_post). */
const demoClient = (world: LocalWorld) => ({
  client_id: world.demo.oauth_client.client_id,
  client_secret: world.demo.oauth_client.client_secret,
});

/** A code of the demo client from the demo user's consent, with its PKCE verifier. */
async function demoCode(world: LocalWorld, i: number): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkceOf(i);
  const consented = await world.call('consent', 'POST', '/v1/oauth2/consent', {
    token: world.demo.personal_access_token,
    body: {
      action: 'allow',
      ...Object.fromEntries(new URLSearchParams(demoAuthorization(world))),
      code_challenge: challenge,
    },
  });
  return { code: new URL(String(consented.headers.Location)).searchParams.get('code') as string, verifier };
}

/** Tokens of the demo client from a consent and a code exchange, made outside the measured request. */
const families: { access_token: string; refresh_token: string }[] = [];
async function demoTokens(world: LocalWorld, i: number) {
  const { code, verifier } = await demoCode(world, 1000 + i);
  const exchanged = await world.call('request-token', 'POST', '/v1/oauth2/token', {
    form: {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: 'http://127.0.0.1:8080/callback',
      ...demoClient(world),
    },
  });
  if (exchanged.status !== 200) throw new Error(`Request Token answered ${exchanged.status}`);
  return JSON.parse(exchanged.body ?? '{}') as { access_token: string; refresh_token: string };
}

/** An access token with products:read, of a client registered (once) for it. */
let productReader: string | undefined;
async function productReaderToken(world: LocalWorld): Promise<string> {
  const pat = world.demo.personal_access_token;
  const registered = await world.call('create-client', 'POST', '/v1/oauth2/register', {
    token: pat,
    body: {
      client_name: 'Bench reader',
      redirect_uris: ['https://app.example.com/callback'],
      scope: 'products:read',
    },
  });
  const client = JSON.parse(registered.body ?? '{}') as { client_id: string; client_secret: string };
  const { verifier, challenge } = pkceOf(9999);
  const consented = await world.call('consent', 'POST', '/v1/oauth2/consent', {
    token: pat,
    body: {
      action: 'allow',
      response_type: 'code',
      client_id: client.client_id,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    },
  });
  const code = new URL(String(consented.headers.Location)).searchParams.get('code') as string;
  const exchanged = await world.call('request-token', 'POST', '/v1/oauth2/token', {
    form: {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      client_secret: client.client_secret,
    },
  });
  return (JSON.parse(exchanged.body ?? '{}') as { access_token: string }).access_token;
}

/** An authorization request of the demo client (PKCE S256). */
const demoAuthorization = (world: LocalWorld) =>
  new URLSearchParams({
    response_type: 'code',
    client_id: world.demo.oauth_client.client_id,
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  }).toString();

const CASES: Case[] = [
  {
    key: 'create-client',
    label: 'Create Client',
    operation: 'create-client',
    status: 201,
    target: 2,
    send: (world) => createClient(world),
  },
  {
    key: 'create-subscription',
    label: 'Create Subscription',
    operation: 'create-subscription',
    status: 201,
    target: 3,
    send: (world) => createSubscription(world),
  },
  {
    key: 'list-wallets',
    label: 'List Wallets (14 wallets, page 1)',
    operation: 'list-wallets',
    status: 200,
    target: 3,
    send: (world) =>
      world.call('list-wallets', 'GET', '/v1/customer-portal/wallets/?limit=10', {
        token: world.demo.customer_session_token,
      }),
  },
  {
    key: 'create-customer-session',
    label: 'Create Customer Session (by id)',
    operation: 'create-customer-session',
    status: 201,
    target: 3,
    send: (world) =>
      world.call('create-customer-session', 'POST', '/v1/customer-sessions/', {
        token: world.demo.personal_access_token,
        body: { customer_id: world.demo.customer_id },
      }),
  },
  {
    key: 'get-wallet',
    label: 'Get Wallet',
    operation: 'get-wallet',
    status: 200,
    target: 2,
    prepare: async (world) => {
      const page = await world.call('list-wallets', 'GET', '/v1/customer-portal/wallets/?limit=1', {
        token: world.demo.customer_session_token,
      });
      walletToGet = JSON.parse(page.body ?? '{}').items[0].id;
    },
    send: (world) =>
      world.call('get-wallet', 'GET', `/v1/customer-portal/wallets/${walletToGet}`, {
        token: world.demo.customer_session_token,
      }),
  },
  {
    key: 'get-product',
    label: 'Get Product',
    operation: 'get-product',
    status: 200,
    target: 2,
    send: (world) =>
      world.call('get-product', 'GET', `/v1/products/${world.demo.free_product_id}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'list-subscriptions',
    label: "List Subscriptions (a customer's, page 1)",
    operation: 'list-subscriptions',
    status: 200,
    // Auth, the customer list's segment counts, its active segment, the embedded customer and product.
    target: 4,
    send: (world) =>
      world.call(
        'list-subscriptions',
        'GET',
        `/v1/subscriptions/?customer_id=${world.demo.large_customer_id}`,
        {
          token: world.demo.personal_access_token,
        },
      ),
  },
  {
    key: 'list-customer-subscriptions',
    label: "List Customer Subscriptions (the session customer's, page 1)",
    operation: 'list-customer-subscriptions',
    status: 200,
    // Auth, the customer list's counts, its active segment, the customer, organization and product.
    target: 4,
    send: (world) =>
      world.call('list-customer-subscriptions', 'GET', '/v1/customer-portal/subscriptions/?active=true', {
        token: world.demo.customer_session_token,
      }),
  },
  {
    key: 'get-customer-subscription',
    label: 'Get Customer Subscription',
    operation: 'get-customer-subscription',
    status: 200,
    target: 3,
    send: (world) =>
      world.call(
        'get-customer-subscription',
        'GET',
        `/v1/customer-portal/subscriptions/${world.demo.customer_subscription_id}`,
        { token: world.demo.customer_session_token },
      ),
  },
  {
    key: 'cancel-customer-subscription',
    label: 'Cancel Customer Subscription (at period end)',
    operation: 'cancel-customer-subscription',
    status: 200,
    target: 4,
    prepare: async (world, i) => {
      portalSubscriptions[i] = JSON.parse((await createSubscription(world)).body ?? '{}').id;
    },
    send: (world, i) =>
      world.call(
        'cancel-customer-subscription',
        'DELETE',
        `/v1/customer-portal/subscriptions/${portalSubscriptions[i]}`,
        {
          token: world.demo.customer_session_token,
        },
      ),
  },
  {
    key: 'update-customer-subscription',
    label: 'Update Customer Subscription (uncancel)',
    operation: 'update-customer-subscription',
    status: 200,
    target: 4,
    prepare: async (world, i) => {
      const id = JSON.parse((await createSubscription(world)).body ?? '{}').id;
      await world.call('cancel-customer-subscription', 'DELETE', `/v1/customer-portal/subscriptions/${id}`, {
        token: world.demo.customer_session_token,
      });
      portalSubscriptions[i] = id;
    },
    send: (world, i) =>
      world.call(
        'update-customer-subscription',
        'PATCH',
        `/v1/customer-portal/subscriptions/${portalSubscriptions[i]}`,
        {
          token: world.demo.customer_session_token,
          body: { cancel_at_period_end: false },
        },
      ),
  },
  {
    key: 'get-subscription',
    label: 'Get Subscription',
    operation: 'get-subscription',
    status: 200,
    target: 3,
    send: (world) =>
      world.call('get-subscription', 'GET', `/v1/subscriptions/${world.demo.subscription_id}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'delete-webhook-endpoint',
    label: 'Delete Webhook Endpoint',
    operation: 'delete-webhook-endpoint',
    status: 204,
    target: 3,
    prepare: async (world, i) => {
      const { endpoint } = await createWebhookEndpoint(world.admin, {
        organizationId: world.demo.organization_id,
        url: `https://hooks.bench.example/${i}`,
      });
      endpointsToDelete[i] = endpoint.id;
    },
    send: (world, i) =>
      world.call('delete-webhook-endpoint', 'DELETE', `/v1/webhooks/endpoints/${endpointsToDelete[i]}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'get-client',
    label: 'Get Client (RFC 7592)',
    operation: 'get-client',
    status: 200,
    target: 1,
    prepare: async (world, i) => {
      registrations[i] = await registered(world);
    },
    send: (world, i) => registrationCall(world, 'get-client', 'GET', i),
  },
  {
    key: 'update-client',
    label: 'Update Client (RFC 7592)',
    operation: 'update-client',
    status: 200,
    target: 2,
    prepare: async (world, i) => {
      registrations[i] = await registered(world);
    },
    send: (world, i) => registrationCall(world, 'update-client', 'PUT', i),
  },
  {
    key: 'delete-client',
    label: 'Delete Client (RFC 7592)',
    operation: 'delete-client',
    status: 204,
    target: 2,
    prepare: async (world, i) => {
      registrations[i] = await registered(world);
    },
    send: (world, i) => registrationCall(world, 'delete-client', 'DELETE', i),
  },
  {
    key: 'update-subscription',
    label: 'Update Subscription (cancel at period end)',
    operation: 'update-subscription',
    status: 200,
    target: 4,
    prepare: async (world, i) => {
      subscriptionsToChange[i] = JSON.parse((await createSubscription(world)).body ?? '{}').id;
    },
    send: (world, i) =>
      world.call('update-subscription', 'PATCH', `/v1/subscriptions/${subscriptionsToChange[i]}`, {
        token: world.demo.personal_access_token,
        body: { cancel_at_period_end: true },
      }),
  },
  {
    key: 'revoke-subscription',
    label: 'Revoke Subscription',
    operation: 'revoke-subscription',
    status: 200,
    target: 4,
    prepare: async (world, i) => {
      subscriptionsToChange[i] = JSON.parse((await createSubscription(world)).body ?? '{}').id;
    },
    send: (world, i) =>
      world.call('revoke-subscription', 'DELETE', `/v1/subscriptions/${subscriptionsToChange[i]}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'create-customer',
    label: 'Create Customer',
    operation: 'create-customer',
    status: 201,
    target: 2,
    send: (world, i) =>
      world.call('create-customer', 'POST', '/v1/customers/', {
        token: world.demo.personal_access_token,
        body: { email: `bench+${run}-${i}@example.com`, external_id: `bench-${run}-${i}` },
      }),
  },
  {
    key: 'get-customer',
    label: 'Get Customer',
    operation: 'get-customer',
    status: 200,
    target: 2,
    send: (world) =>
      world.call('get-customer', 'GET', `/v1/customers/${world.demo.customer_id}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'list-customers',
    label: 'List Customers (a page of 10)',
    operation: 'list-customers',
    status: 200,
    target: 3,
    send: (world) =>
      world.call('list-customers', 'GET', '/v1/customers/?limit=10&sorting=email', {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'list-customers-query',
    label: 'List Customers (query: name or e-mail prefix, external id)',
    operation: 'list-customers',
    status: 200,
    target: 4,
    send: (world) =>
      world.call('list-customers', 'GET', '/v1/customers/?query=ada', {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'get-customer-external',
    label: 'Get Customer by external id',
    operation: 'get-customer-external',
    status: 200,
    target: 2,
    send: (world) =>
      world.call(
        'get-customer-external',
        'GET',
        `/v1/customers/external/${world.demo.customer_external_id}`,
        {
          token: world.demo.personal_access_token,
        },
      ),
  },
  customerChangeCase('update-customer', 'Update Customer (new e-mail address and name)', 'id'),
  customerChangeCase('update-customer-external', 'Update Customer by external id', 'external'),
  customerChangeCase('delete-customer', 'Delete Customer', 'id'),
  customerChangeCase('delete-customer-external', 'Delete Customer by external id', 'external'),
  {
    key: 'create-product',
    label: 'Create Product (the product and 20 list items, one transaction)',
    operation: 'create-product',
    status: 201,
    target: 3,
    send: (world, i) =>
      world.call('create-product', 'POST', '/v1/products/', {
        token: world.demo.personal_access_token,
        body: {
          name: `Bench plan ${run}-${i}`,
          recurring_interval: 'month',
          prices: [{ amount_type: 'fixed', price_amount: 0 }],
        },
      }),
  },
  {
    key: 'list-products',
    label: 'List Products (live ones, by name)',
    operation: 'list-products',
    status: 200,
    target: 3,
    send: (world) =>
      world.call('list-products', 'GET', '/v1/products/?is_archived=false&sorting=name', {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'list-products-query',
    label: 'List Products (name prefix)',
    operation: 'list-products',
    status: 200,
    target: 2,
    send: (world) =>
      world.call('list-products', 'GET', '/v1/products/?query=pro', {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'update-product',
    label: 'Update Product (renamed: its name entries move)',
    operation: 'update-product',
    status: 200,
    target: 3,
    send: (world, i) =>
      world.call('update-product', 'PATCH', `/v1/products/${world.demo.paid_product_id}`, {
        token: world.demo.personal_access_token,
        body: { name: `Pro plan ${run}-${i}` },
      }),
  },
  {
    key: 'create-webhook-endpoint',
    label: 'Create Webhook Endpoint',
    operation: 'create-webhook-endpoint',
    status: 201,
    target: 2,
    send: (world, i) =>
      world.call('create-webhook-endpoint', 'POST', '/v1/webhooks/endpoints', {
        token: world.demo.personal_access_token,
        body: { url: `https://hooks.bench.example/new/${i}`, format: 'raw', events: ['customer.created'] },
      }),
  },
  {
    key: 'list-webhook-endpoints',
    label: 'List Webhook Endpoints (page 1)',
    operation: 'list-webhook-endpoints',
    status: 200,
    target: 3,
    send: (world) =>
      world.call('list-webhook-endpoints', 'GET', '/v1/webhooks/endpoints?limit=10', {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'get-webhook-endpoint',
    label: 'Get Webhook Endpoint',
    operation: 'get-webhook-endpoint',
    status: 200,
    target: 2,
    send: (world) =>
      world.call(
        'get-webhook-endpoint',
        'GET',
        `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}`,
        {
          token: world.demo.personal_access_token,
        },
      ),
  },
  {
    key: 'update-webhook-endpoint',
    label: 'Update Webhook Endpoint (rename)',
    operation: 'update-webhook-endpoint',
    status: 200,
    target: 3,
    send: (world, i) =>
      world.call(
        'update-webhook-endpoint',
        'PATCH',
        `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}`,
        {
          token: world.demo.personal_access_token,
          body: { name: `Bench ${run}-${i}` },
        },
      ),
  },
  {
    key: 'reset-webhook-endpoint-secret',
    label: 'Reset Webhook Endpoint Secret',
    operation: 'reset-webhook-endpoint-secret',
    status: 200,
    target: 3,
    send: (world) =>
      world.call(
        'reset-webhook-endpoint-secret',
        'PATCH',
        `/v1/webhooks/endpoints/${world.demo.webhook_endpoint_ids[1]}/secret`,
        { token: world.demo.personal_access_token },
      ),
  },
  {
    key: 'list-webhook-deliveries',
    label: 'List Webhook Deliveries (page 1)',
    operation: 'list-webhook-deliveries',
    status: 200,
    target: 3,
    send: (world) =>
      world.call('list-webhook-deliveries', 'GET', '/v1/webhooks/deliveries?limit=10', {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'redeliver-webhook-event',
    label: 'Redeliver Webhook Event',
    operation: 'redeliver-webhook-event',
    status: 202,
    target: 2,
    send: (world) =>
      world.call(
        'redeliver-webhook-event',
        'POST',
        `/v1/webhooks/events/${world.demo.webhook_event_id}/redeliver`,
        { token: world.demo.personal_access_token },
      ),
  },
  {
    key: 'delete-unknown',
    label: 'Delete Webhook Endpoint, unknown id (404)',
    operation: 'delete-webhook-endpoint',
    status: 404,
    target: 2,
    send: (world) =>
      world.call('delete-webhook-endpoint', 'DELETE', `/v1/webhooks/endpoints/${UNKNOWN_ID}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'create-client+key',
    label: 'Create Client + Idempotency-Key (first use)',
    operation: 'create-client',
    status: 201,
    target: 4,
    send: (world, i) => createClient(world, `bench-${run}-cc-${i}`),
  },
  {
    key: 'create-client+replay',
    label: 'Create Client + Idempotency-Key (replay)',
    operation: 'create-client',
    status: 201,
    target: 4,
    prepare: (world, i) => createClient(world, `bench-${run}-ccr-${i}`),
    send: (world, i) => createClient(world, `bench-${run}-ccr-${i}`),
  },
  {
    key: 'create-subscription+key',
    label: 'Create Subscription + Idempotency-Key (first use)',
    operation: 'create-subscription',
    status: 201,
    target: 5,
    send: (world, i) => createSubscription(world, `bench-${run}-cs-${i}`),
  },
  {
    key: 'create-subscription+replay',
    label: 'Create Subscription + Idempotency-Key (replay)',
    operation: 'create-subscription',
    status: 201,
    target: 5,
    prepare: (world, i) => createSubscription(world, `bench-${run}-csr-${i}`),
    send: (world, i) => createSubscription(world, `bench-${run}-csr-${i}`),
  },
  {
    key: 'authorize',
    label: 'Authorize (the demo client)',
    operation: 'authorize',
    status: 200,
    target: 2,
    send: (world) =>
      world.call('authorize', 'GET', `/v1/oauth2/authorize?${demoAuthorization(world)}`, {
        token: world.demo.personal_access_token,
      }),
  },
  {
    key: 'consent',
    label: 'Consent (allow)',
    operation: 'consent',
    status: 303,
    target: 3,
    send: (world) =>
      world.call('consent', 'POST', '/v1/oauth2/consent', {
        token: world.demo.personal_access_token,
        body: { action: 'allow', ...Object.fromEntries(new URLSearchParams(demoAuthorization(world))) },
      }),
  },
  {
    key: 'request-token',
    label: 'Request Token (code exchange)',
    operation: 'request-token',
    status: 200,
    target: 3,
    // The consent that issues each code is prepared outside the measured request.
    prepare: async (world, i) => {
      codes[i] = await demoCode(world, i);
    },
    send: (world, i) =>
      world.call('request-token', 'POST', '/v1/oauth2/token', {
        form: {
          grant_type: 'authorization_code',
          code: codes[i]?.code as string,
          code_verifier: codes[i]?.verifier as string,
          redirect_uri: 'http://127.0.0.1:8080/callback',
          client_id: world.demo.oauth_client.client_id,
          client_secret: world.demo.oauth_client.client_secret,
        },
      }),
  },
  {
    key: 'revoke-token',
    label: 'Revoke Token (an access token)',
    operation: 'revoke-token',
    status: 200,
    target: 3,
    // A fresh family per repetition, issued outside the measured request.
    prepare: async (world, i) => {
      families[i] = await demoTokens(world, i);
    },
    send: (world, i) =>
      world.call('revoke-token', 'POST', '/v1/oauth2/revoke', {
        form: { token: families[i]?.access_token as string, ...demoClient(world) },
      }),
  },
  {
    key: 'introspect-token',
    label: 'Introspect Token (an active access token)',
    operation: 'introspect-token',
    status: 200,
    target: 2,
    send: (world) =>
      world.call('introspect-token', 'POST', '/v1/oauth2/introspect', {
        form: { token: world.demo.oauth_tokens.access_token, ...demoClient(world) },
      }),
  },
  {
    key: 'userinfo',
    label: 'UserInfo (with the email scope)',
    operation: 'userinfo',
    status: 200,
    target: 2,
    send: (world) =>
      world.call('userinfo', 'GET', '/v1/oauth2/userinfo', { token: world.demo.personal_access_token }),
  },
  {
    key: 'get-product-oauth',
    label: 'Get Product with an OAuth access token',
    operation: 'get-product',
    status: 200,
    // The token and its client's liveness item are one BatchGetItem: the same 2 as with a PAT.
    target: 2,
    prepare: async (world) => {
      productReader ??= await productReaderToken(world);
    },
    send: (world) =>
      world.call('get-product', 'GET', `/v1/products/${world.demo.free_product_id}`, {
        token: productReader as string,
      }),
  },
];

// Every operation of the route table has at least one case: a new one cannot go unmeasured.
for (const { name } of operations) {
  if (!CASES.some((c) => c.operation === name)) throw new Error(`dynamo-work: no case for ${name}`);
}

/** Does `Idempotency-Key` work yet? The same key twice must give the same answer, and create once. */
async function idempotencyWorks(world: LocalWorld): Promise<boolean> {
  const key = `bench-${run}-probe`;
  const first = await createClient(world, key);
  const second = await createClient(world, key);
  return first.status === 201 && second.status === 201 && first.body === second.body;
}

export async function dynamoWork(
  world: LocalWorld,
  options: { repetitions: number },
): Promise<{ result: SectionResult; work: OperationWork[] }> {
  const withKey = await idempotencyWorks(world);
  const work: OperationWork[] = [];
  const warmups = 3;
  for (const c of CASES) {
    const available = withKey || !c.key.includes('+');
    if (!available) {
      work.push({
        ...c,
        target: c.target,
        roundTrips: Number.NaN,
        rru: Number.NaN,
        wru: Number.NaN,
        failedWrites: 0,
        roundTripMs: Number.NaN,
        requestMs: Number.NaN,
        available,
      });
      continue;
    }
    const perRequest: MeteredCall[][] = [];
    const requestMs: number[] = [];
    for (let i = 0; i < warmups + options.repetitions; i++) {
      await c.prepare?.(world, i);
      world.meter.reset();
      const started = performance.now();
      const reply = await c.send(world, i);
      const elapsed = performance.now() - started;
      // A snapshot: the next `prepare` sends requests too, before the meter is reset.
      const calls = [...world.meter.calls];
      if (reply.status !== c.status) {
        throw new Error(`${c.label}: expected ${c.status}, got ${reply.status} ${reply.body ?? ''}`);
      }
      if (i < warmups) continue;
      perRequest.push(calls);
      requestMs.push(elapsed);
    }
    const units = (kind: 'read' | 'write') =>
      mean(
        perRequest.map((calls) =>
          calls.filter((x) => x.kind === kind).reduce((s, x) => s + x.units + (x.failed ? 1 : 0), 0),
        ),
      );
    work.push({
      key: c.key,
      label: c.label,
      operation: c.operation,
      status: c.status,
      target: c.target,
      roundTrips: Math.max(...perRequest.map((calls) => calls.length)),
      rru: units('read'),
      wru: units('write'),
      failedWrites: mean(perRequest.map((calls) => calls.filter((x) => x.failed).length)),
      roundTripMs: median(perRequest.flat().map((x) => x.ms)),
      requestMs: median(requestMs),
      available,
    });
  }

  const base = (key: string) => work.find((w) => w.key === key.split('+')[0]);
  const rows = work.map((w) => {
    if (!w.available)
      return [
        w.label,
        'n/a',
        `≤ ${w.target}`,
        'n/a (Idempotency-Key not working yet)',
        '',
        '',
        '',
        '',
        '',
        '',
      ];
    const reference = w.key.includes('+') ? base(w.key) : undefined;
    return [
      w.label,
      w.roundTrips,
      reference ? `≤ ${reference.roundTrips} + 2` : `≤ ${w.target}`,
      reference
        ? `${fmt(w.roundTrips / reference.roundTrips, 2)}× (${w.roundTrips >= reference.roundTrips ? '+' : ''}${w.roundTrips - reference.roundTrips})`
        : `${fmt(w.roundTrips / (w.target as number), 2)}× of limit`,
      verdict(w.roundTrips <= (reference ? reference.roundTrips + 2 : (w.target as number))),
      fmt(w.rru, 1),
      fmt(w.wru, 1),
      fmt(w.failedWrites, 0),
      fmt(w.roundTripMs, 1),
      fmt(w.requestMs, 1),
    ];
  });
  return {
    work,
    result: {
      id: 'dynamo',
      title: '2. DynamoDB work per request',
      method: [
        'Real handlers (createHandler) in process against DynamoDB Local seeded with the demo data; a middleware on the',
        "document client's stack sets ReturnConsumedCapacity=TOTAL on every command and sums round trips and",
        `CapacityUnits (arrays for BatchGet/TransactWrite). ${warmups} warm-ups, then ${options.repetitions} requests per case;`,
        'round trips: the maximum seen; units: mean per request; times: medians (DynamoDB Local over loopback).',
      ],
      tables: [
        {
          title: 'Round trips and capacity per request',
          note: 'round trips include authentication',
          columns: [
            'operation',
            'round trips',
            'target',
            'ratio',
            'verdict',
            'RRU',
            'WRU',
            'failed cond. writes',
            'ms / round trip',
            'ms / request',
          ],
          rows,
        },
      ],
      notes: [
        "WRU of TransactWriteItems already count 2 units per item per KB (DynamoDB Local reports transactional capacity): Create Subscription's put + 2 condition checks = 6 WRU.",
        'Writes to items indexed by GSI1 (OAuth client, subscription) also pay the index write.',
        "A failed conditional write (delete of an unknown id, an idempotency replay's claim) returns no ConsumedCapacity but DynamoDB still charges it (by item size): counted here as 1 WRU, a floor.",
        withKey
          ? 'Idempotency-Key works: first use adds the claim (PutItem) and the completion (UpdateItem); a replay is authentication plus the failed claim, which returns the stored answer.'
          : 'Idempotency-Key did not work when this ran (same key twice gave different answers): those rows are n/a.',
      ],
    },
  };
}
