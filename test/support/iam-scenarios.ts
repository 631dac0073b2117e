/**
 * The IAM suites' scenarios, shared by the fast check (test/integration/iam.test.ts) and the long
 * mutation suite (test/integration/iam-mutations.test.ts, `npm run test:iam-mutations`).
 *
 * - A scenario per function with a table grant walks every path of it that touches the table
 *   (success, idempotent replay, a failure that releases its key, every sort order) and says, step
 *   by step, what its full grant must make it answer.
 * - `elementsOf()` lists every element of a function's DynamoDB statements (an action, a leading-key
 *   pattern, an index ARN) with the policy that lacks it.
 * - `recordScenario()` runs a scenario once under the template policy and keeps every request
 *   context the IAM proxy judged; `offlineRefusals()` judges those contexts again, without DynamoDB
 *   and without the handlers, under a policy lacking one element (the proxy's own evaluator and
 *   statement resolution, `resolvedStatements()` + `decide()`).
 *
 * Why judging recorded requests stands in for a re-run: up to the first request a mutated policy
 * refuses, a re-run sends the same requests and gets the same answers, so it reaches that request
 * and is refused too; if the mutated policy refuses none of them, the re-run is the recorded run.
 * The long suite re-runs every mutation and checks that it agrees, request for request.
 *
 * The scenarios are keyed by function name (`satisfies Record<FunctionName, …>`): a new operation,
 * scheduled or pipeline function does not compile until it has one, and its statements are then
 * mutated like the others'.
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { createHandler as createDeliverer } from '#functions/webhook-deliverer/handler.ts';
import { createHandler as createRelay } from '#functions/webhook-relay/handler.ts';
import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { decide, type RequestContext } from '#scripts/local/iam/evaluate.ts';
import type { RawStatement, StackPolicies } from '#scripts/local/iam/policy.ts';
import { resolvedStatements, type Verdict } from '#scripts/local/iam/proxy.ts';
import { sqsEvent } from '#scripts/local/pipeline.ts';
import { DEMO_CUSTOMER_EXTERNAL_ID } from '#scripts/local/seed.ts';
import {
  endpointDeliveriesOwner,
  getWebhookEvent,
  recordWebhookEvent,
  startRound,
} from '#shared/data/deliveries.ts';
import { indexNames, keys, listKeys, partitions, REDELIVERY_SORT_KEY_PREFIX } from '#shared/data/table.ts';
import { SORTING_VALUES } from '#shared/data/wallet-order.ts';
import {
  type OperationName,
  operations,
  type PipelineFunctionName,
  pipelineFunctions,
  type ScheduledFunctionName,
  scheduledFunctions,
} from '#shared/operations.ts';
import { LocalQueue } from '#shared/queue/local.ts';
import { envelope, webhookEventId } from '#shared/webhooks/events.ts';
import type { DeliveryMessage } from '#shared/webhooks/relay.ts';
import { LOCAL_REGION } from './dynamodb.ts';
import {
  authorizationCode,
  clientRequest,
  issueTokens,
  pkce,
  REDIRECT_URI,
  registerClient as registerOAuthClient,
  tokenRequest,
} from './oauth.ts';
import { seedWebhookEvent } from './outbox.ts';
import { loopbackEndpoint } from './pipeline.ts';
import { startReceiver } from './receiver.ts';
import { createWorld, type Reply, underPolicies, type World } from './world.ts';

/** The functions whose grants are proven here: the operations', the scheduled and the pipeline's. */
export type FunctionName = OperationName | ScheduledFunctionName | PipelineFunctionName;

/** One request of a scenario: what it answered, and what its full grant must make it answer. */
export interface Step {
  what: string;
  got: string;
  expected: string;
}

export type Scenario = (world: World) => Promise<Step[]>;

const step = (what: string, reply: Reply, status: number, sameAs?: { reply: Reply; field: string }): Step => {
  const differs = sameAs && reply.body?.[sameAs.field] !== sameAs.reply.body?.[sameAs.field];
  return { what, got: `${reply.status}${differs ? ` another ${sameAs.field}` : ''}`, expected: `${status}` };
};

/** A fresh subscription through Create Subscription (its own function and policy). */
async function freshSubscription(world: World): Promise<string> {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
  });
  if (reply.status !== 201) throw new Error(`Create Subscription answered ${reply.status}`);
  return reply.body.id;
}

/** A fresh customer through Create Customer (its own function and policy), with an external id or none. */
async function freshCustomer(
  world: World,
  withExternalId = true,
): Promise<{ id: string; externalId: string }> {
  const externalId = `iam-${randomUUID()}`;
  const reply = await world.call('POST', '/v1/customers/', {
    token: world.demo.personal_access_token,
    body: {
      email: `iam-${randomUUID()}@example.com`,
      name: 'IAM',
      ...(withExternalId ? { external_id: externalId } : {}),
    },
  });
  if (reply.status !== 201) throw new Error(`Create Customer answered ${reply.status}`);
  return { id: reply.body.id, externalId };
}

/** A fresh client through Create Client (its own function and policy): RFC 7592 scenarios start from it. */
async function registerClient(
  world: World,
): Promise<{ client_id: string; registration_access_token: string }> {
  const reply = await world.call('POST', '/v1/oauth2/register', {
    token: world.demo.personal_access_token,
    body: { client_name: 'IAM scenario', redirect_uris: ['https://app.example.com/callback'] },
  });
  if (reply.status !== 201) throw new Error(`Create Client answered ${reply.status}`);
  return reply.body;
}

/** Idempotency keys unique to one run of a scenario: the runs share one table. */
let run = 0;
const key = (name: string) => `iam-${run}-${name}`;

export const scenarios = {
  'create-client': async (world) => {
    const register = (key: string, redirect: string) =>
      world.call('POST', '/v1/oauth2/register', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': key },
        body: { client_name: 'IAM scenario', redirect_uris: [redirect] },
      });
    const created = await register(key('ok'), 'https://app.example.com/callback');
    const replayed = await register(key('ok'), 'https://app.example.com/callback');
    // Refused by the service after the key is claimed: the claim is released, so the retry runs again.
    const refused = await register(key('refused'), 'http://app.example.com/callback');
    const retried = await register(key('refused'), 'http://app.example.com/callback');
    return [
      step('register', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'client_id' }),
      step('refused after claiming its key', refused, 400),
      step('retry of the refused request', retried, 400),
    ];
  },
  'create-subscription': async (world) => {
    const subscribe = (key: string, productId: string) =>
      world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': key },
        body: { product_id: productId, customer_id: world.demo.customer_id },
      });
    const created = await subscribe(key('ok'), world.demo.free_product_id);
    const replayed = await subscribe(key('ok'), world.demo.free_product_id);
    const refused = await subscribe(key('paid'), world.demo.paid_product_id);
    const retried = await subscribe(key('paid'), world.demo.paid_product_id);
    return [
      step('subscribe', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  'list-wallets': async (world) => {
    // Every order the parameter can ask for, one and two criteria: each is served by its own index.
    const orders = SORTING_VALUES.flatMap((first) => [
      [first],
      ...SORTING_VALUES.filter((second) => second.replace('-', '') !== first.replace('-', '')).map(
        (second) => [first, second],
      ),
    ]);
    const steps: Step[] = [];
    for (const order of orders) {
      const query = order.map((value) => `sorting=${encodeURIComponent(value)}`).join('&');
      const reply = await world.call('GET', `/v1/customer-portal/wallets/?${query}`, {
        token: world.demo.customer_session_token,
      });
      steps.push(step(`sorting=${order.join(',')}`, reply, 200));
    }
    return steps;
  },
  'delete-webhook-endpoint': async (world) => {
    // A fresh endpoint per run: every run deletes the one it is given.
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://hooks.example/iam',
    });
    const id = endpoint.id;
    const deleted = await world.call('DELETE', `/v1/webhooks/endpoints/${id}`, {
      token: world.demo.personal_access_token,
    });
    return [step('delete', deleted, 204)];
  },
  'create-customer-session': async (world) => {
    const open = (key: string, body: object) =>
      world.call('POST', '/v1/customer-sessions/', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': key },
        body,
      });
    const byId = await open(key('id'), { customer_id: world.demo.customer_id });
    const replayed = await open(key('id'), { customer_id: world.demo.customer_id });
    const byExternalId = await open(key('external'), { external_customer_id: DEMO_CUSTOMER_EXTERNAL_ID });
    const refused = await open(key('unknown'), { external_customer_id: 'no-such-customer' });
    const retried = await open(key('unknown'), { external_customer_id: 'no-such-customer' });
    return [
      step('by customer id', byId, 201),
      step('replay with the same key', replayed, 201, { reply: byId, field: 'id' }),
      step('by external id', byExternalId, 201),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  'get-wallet': async (world) => {
    const token = world.demo.customer_session_token;
    const page = await world.call('GET', '/v1/customer-portal/wallets/?limit=1', { token });
    const found = await world.call('GET', `/v1/customer-portal/wallets/${page.body.items[0].id}`, { token });
    const unknown = await world.call('GET', `/v1/customer-portal/wallets/${randomUUID()}`, { token });
    return [step('its own wallet', found, 200), step('an unknown wallet', unknown, 404)];
  },
  'get-product': async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/products/${id}`, { token: world.demo.personal_access_token });
    return [
      step('a product', await get(world.demo.free_product_id), 200),
      step('an unknown product', await get(randomUUID()), 404),
    ];
  },
  'get-subscription': async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token });
    return [
      step('a subscription', await get(world.demo.subscription_id), 200),
      step('an unknown subscription', await get(randomUUID()), 404),
    ];
  },
  'list-subscriptions': async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/subscriptions/${query}`, { token: world.demo.personal_access_token });
    const { large_customer_id: customer, free_product_id: product } = world.demo;
    return [
      step("the organization's list", await list('?sorting=status&sorting=-current_period_end'), 200),
      step("a customer's list", await list(`?customer_id=${customer}&active=true`), 200),
      step("a product's list", await list(`?product_id=${product}&sorting=amount`), 200),
      step('a customer and product list', await list(`?customer_id=${customer}&product_id=${product}`), 200),
    ];
  },
  'list-customer-subscriptions': async (world) => {
    await freshSubscription(world);
    const list = (query: string) =>
      world.call('GET', `/v1/customer-portal/subscriptions/${query}`, {
        token: world.demo.customer_session_token,
      });
    return [
      step("the customer's list", await list('?sorting=-status'), 200),
      step(
        "the customer's list of one product",
        await list(`?product_id=${world.demo.free_product_id}`),
        200,
      ),
    ];
  },
  'get-customer-subscription': async (world) => {
    const id = await freshSubscription(world);
    const get = (subscription: string) =>
      world.call('GET', `/v1/customer-portal/subscriptions/${subscription}`, {
        token: world.demo.customer_session_token,
      });
    return [
      step('its own subscription', await get(id), 200),
      step('an unknown one', await get(randomUUID()), 404),
    ];
  },
  'update-customer-subscription': async (world) => {
    const id = await freshSubscription(world);
    const patch = (body: unknown) =>
      world.call('PATCH', `/v1/customer-portal/subscriptions/${id}`, {
        token: world.demo.customer_session_token,
        body,
      });
    return [
      step(
        'cancel at period end',
        await patch({ cancel_at_period_end: true, cancellation_reason: 'unused' }),
        200,
      ),
      step('uncancel', await patch({ cancel_at_period_end: false }), 200),
      step('uncancel again', await patch({ cancel_at_period_end: false }), 409),
    ];
  },
  'cancel-customer-subscription': async (world) => {
    const id = await freshSubscription(world);
    const cancel = () =>
      world.call('DELETE', `/v1/customer-portal/subscriptions/${id}`, {
        token: world.demo.customer_session_token,
      });
    return [step('cancel at period end', await cancel(), 200), step('cancel again', await cancel(), 403)];
  },
  'get-client': async (world) => {
    const client = await registerClient(world);
    const read = await world.call('GET', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
    });
    return [step('its registration', read, 200)];
  },
  'update-client': async (world) => {
    const client = await registerClient(world);
    const replaced = await world.call('PUT', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
      body: {
        client_id: client.client_id,
        client_name: 'IAM renamed',
        redirect_uris: ['https://app.example.com/cb'],
      },
    });
    return [step('replace its registration', replaced, 200)];
  },
  'delete-client': async (world) => {
    const client = await registerClient(world);
    const deleted = await world.call('DELETE', `/v1/oauth2/register/${client.client_id}`, {
      token: client.registration_access_token,
    });
    return [step('delete its registration', deleted, 204)];
  },
  'update-subscription': async (world) => {
    const id = await freshSubscription(world);
    const patch = (body: unknown) =>
      world.call('PATCH', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token, body });
    const canceled = await patch({ cancel_at_period_end: true });
    const revoked = await patch({ revoke: true });
    const refused = await patch({ cancel_at_period_end: false });
    return [
      step('cancel at period end', canceled, 200),
      step('revoke', revoked, 200),
      step('change an ended subscription', refused, 403),
    ];
  },
  'revoke-subscription': async (world) => {
    const id = await freshSubscription(world);
    const revoke = () =>
      world.call('DELETE', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token });
    const first = await revoke();
    const second = await revoke();
    return [step('revoke', first, 200), step('revoke again', second, 403)];
  },
  'create-customer': async (world) => {
    const email = `iam-${run}-${Date.now()}@example.com`;
    const create = (body: unknown, idempotencyKey?: string) =>
      world.call('POST', '/v1/customers/', {
        token: world.demo.personal_access_token,
        body,
        ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
      });
    const created = await create({ email, external_id: `iam-${run}-${email}` }, key('customer'));
    const replayed = await create({ email, external_id: `iam-${run}-${email}` }, key('customer'));
    // Refused after claiming its key: the claim is released, so the retry runs again.
    const taken = await create({ email }, key('taken'));
    const retried = await create({ email }, key('taken'));
    return [
      step('create with both guards', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('a taken e-mail, refused after claiming its key', taken, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  'get-customer': async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/customers/${id}`, { token: world.demo.personal_access_token });
    return [
      step('a customer', await get(world.demo.customer_id), 200),
      step('an unknown customer', await get(randomUUID()), 404),
    ];
  },
  'list-customers': async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/customers/${query}`, { token: world.demo.personal_access_token });
    return [
      step('a page', await list('?limit=2&sorting=name'), 200),
      step('by e-mail address', await list('?email=ada@customer.example'), 200),
      step('by query', await list('?query=a'), 200),
    ];
  },
  'get-customer-external': async (world) => {
    const get = (externalId: string) =>
      world.call('GET', `/v1/customers/external/${externalId}`, { token: world.demo.personal_access_token });
    return [
      step('a customer', await get(DEMO_CUSTOMER_EXTERNAL_ID), 200),
      step('an unknown external id', await get(randomUUID()), 404),
    ];
  },
  'update-customer': async (world) => {
    const { id } = await freshCustomer(world, false);
    // A new e-mail address (one guard released, one taken), a first external id (a guard taken), a
    // new name (entries moved).
    const changed = await world.call('PATCH', `/v1/customers/${id}`, {
      token: world.demo.personal_access_token,
      body: {
        name: 'IAM renamed',
        email: `iam-moved-${randomUUID()}@example.com`,
        external_id: `iam-${randomUUID()}`,
      },
    });
    return [step('change e-mail, name and external id', changed, 200)];
  },
  'update-customer-external': async (world) => {
    const { externalId } = await freshCustomer(world);
    const changed = await world.call('PATCH', `/v1/customers/external/${externalId}`, {
      token: world.demo.personal_access_token,
      body: { name: 'IAM renamed', email: `iam-moved-${randomUUID()}@example.com` },
    });
    return [step('change e-mail and name', changed, 200)];
  },
  'delete-customer': async (world) => {
    const { id } = await freshCustomer(world);
    const remove = () =>
      world.call('DELETE', `/v1/customers/${id}`, { token: world.demo.personal_access_token });
    const first = await remove();
    const second = await remove();
    return [step('delete', first, 204), step('delete again', second, 404)];
  },
  'delete-customer-external': async (world) => {
    const { externalId } = await freshCustomer(world);
    const remove = () =>
      world.call('DELETE', `/v1/customers/external/${externalId}`, {
        token: world.demo.personal_access_token,
      });
    const first = await remove();
    const second = await remove();
    return [step('delete', first, 204), step('delete again', second, 404)];
  },
  'create-product': async (world) => {
    const create = (body: unknown, idempotencyKey: string) =>
      world.call('POST', '/v1/products/', {
        token: world.demo.personal_access_token,
        body,
        headers: { 'idempotency-key': idempotencyKey },
      });
    const product = {
      name: `IAM ${run}`,
      recurring_interval: 'month',
      prices: [{ amount_type: 'fixed', price_amount: 0 }],
    };
    const created = await create(product, key('product'));
    const replayed = await create(product, key('product'));
    // No price in the organization's currency: refused after claiming its key, which is released.
    const refused = await create(
      { ...product, prices: [{ ...product.prices[0], price_currency: 'eur' }] },
      key('eur'),
    );
    const retried = await create(
      { ...product, prices: [{ ...product.prices[0], price_currency: 'eur' }] },
      key('eur'),
    );
    return [
      step('create', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  'list-products': async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/products/?${query}`, { token: world.demo.personal_access_token });
    return [
      step('the whole list', await list('sorting=-created_at'), 200),
      step('a view', await list('is_archived=false&is_recurring=true&sorting=name'), 200),
      step('a name prefix', await list('query=free'), 200),
    ];
  },
  'update-product': async (world) => {
    // A fresh product per run, through Create Product (its own function and policy).
    const created = await world.call('POST', '/v1/products/', {
      token: world.demo.personal_access_token,
      body: { name: `IAM update ${run}`, prices: [{ amount_type: 'fixed', price_amount: 100 }] },
    });
    if (created.status !== 201) throw new Error(`Create Product answered ${created.status}`);
    const patch = (id: string, body: unknown) =>
      world.call('PATCH', `/v1/products/${id}`, { token: world.demo.personal_access_token, body });
    const id = created.body.id as string;
    return [
      // Entries move (name, price) and the product leaves one view for another (archived).
      step(
        'rename, reprice and archive',
        await patch(id, { name: `IAM renamed ${run}`, is_archived: true, prices: [{ amount_type: 'free' }] }),
        200,
      ),
      step('unarchive', await patch(id, { is_archived: false }), 200),
      step('an unknown product', await patch(randomUUID(), { name: 'nobody' }), 404),
    ];
  },
  'create-webhook-endpoint': async (world) => {
    const create = (idempotencyKey: string, url: string) =>
      world.call('POST', '/v1/webhooks/endpoints', {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': idempotencyKey },
        body: { url, format: 'raw', events: ['customer.created'] },
      });
    const created = await create(key('hook'), 'https://hooks.example.com/iam');
    const replayed = await create(key('hook'), 'https://hooks.example.com/iam');
    // Refused by the service after the key is claimed: the claim is released, so the retry runs again.
    const refused = await create(key('private'), 'https://10.0.0.1/iam');
    const retried = await create(key('private'), 'https://10.0.0.1/iam');
    return [
      step('create', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'secret' }),
      step('a private address, refused after claiming its key', refused, 422),
      step('retry of the refused request', retried, 422),
    ];
  },
  'list-webhook-endpoints': async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/webhooks/endpoints${query}`, { token: world.demo.personal_access_token });
    return [
      step('newest first', await list('?limit=2'), 200),
      step('by name, then url', await list('?sorting=-name&sorting=url'), 200),
      step('past the end (counts only)', await list('?page=50'), 200),
    ];
  },
  'get-webhook-endpoint': async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/webhooks/endpoints/${id}`, { token: world.demo.personal_access_token });
    return [
      step('an endpoint', await get(world.demo.webhook_endpoint_ids[1] as string), 200),
      step('an unknown endpoint', await get(randomUUID()), 404),
    ];
  },
  'update-webhook-endpoint': async (world) => {
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://hooks.example/iam-update',
    });
    const update = (body: unknown) =>
      world.call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, {
        token: world.demo.personal_access_token,
        body,
      });
    return [
      // Name and URL move their list entries: old ones deleted, new ones put.
      step('rename and move', await update({ name: `IAM ${run}`, url: 'https://moved.example/iam' }), 200),
      step('disable', await update({ enabled: false }), 200),
      step('nothing to change (no write)', await update({}), 200),
    ];
  },
  'reset-webhook-endpoint-secret': async (world) => {
    const { endpoint } = await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://hooks.example/iam-reset',
    });
    const reset = () =>
      world.call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}/secret`, {
        token: world.demo.personal_access_token,
      });
    return [step('reset', await reset(), 200), step('reset again', await reset(), 200)];
  },
  /**
   * The scheduled clock, invoked as its schedule invokes it, a month and a few days ahead: the fresh
   * subscription renews (its current_period_end entries move), the one set to cancel ends (its entries
   * move to the ended segment, both counts change).
   */
  'subscription-clock': async (world) => {
    const renewing = await freshSubscription(world);
    const ending = await freshSubscription(world);
    const token = world.demo.personal_access_token;
    const canceled = await world.call('PATCH', `/v1/subscriptions/${ending}`, {
      token,
      body: { cancel_at_period_end: true },
    });
    const { createHandler } = await import('#functions/subscription-clock/handler.ts');
    const clock = createHandler({
      ...world.depsFor('subscription-clock'),
      now: () => new Date(Date.now() + 35 * 86_400_000),
    });
    const ran = await clock({}).then(
      () => 'ran',
      () => 'failed',
    );
    const read = async (id: string) => (await world.call('GET', `/v1/subscriptions/${id}`, { token })).body;
    const [renewed, ended] = await Promise.all([read(renewing), read(ending)]);
    return [
      step('cancel one at period end', canceled, 200),
      { what: 'a run of the clock', got: ran, expected: 'ran' },
      { what: 'the live one renewed', got: String(renewed.modified_at !== null), expected: 'true' },
      { what: 'the canceled one ended', got: ended.status, expected: 'canceled' },
    ];
  },
  authorize: async (world) => {
    const client = world.demo.oauth_client.client_id;
    const ask = (clientId: string) =>
      world.call('GET', `/v1/oauth2/authorize?${authorizationQuery(clientId)}`, {
        token: world.demo.personal_access_token,
      });
    return [
      step('a valid request', await ask(client), 200),
      step('an unknown client', await ask(`polar_ci_${'Q'.repeat(48)}`), 400),
    ];
  },
  consent: async (world) => {
    const allow = (key: string, token: string) =>
      world.call('POST', '/v1/oauth2/consent', {
        token,
        headers: { 'idempotency-key': key },
        body: {
          action: 'allow',
          ...Object.fromEntries(new URLSearchParams(authorizationQuery(world.demo.oauth_client.client_id))),
        },
      });
    const allowed = await allow(key('ok'), world.demo.personal_access_token);
    const replayed = await allow(key('ok'), world.demo.personal_access_token);
    // Refused by the service after the key is claimed: a token cannot delegate a scope it lacks.
    const refused = await allow(key('refused'), world.demo.personal_access_token_without_scopes);
    const retried = await allow(key('refused'), world.demo.personal_access_token_without_scopes);
    return [
      step('allow', allowed, 303),
      step('replay with the same key', replayed, 303, { reply: allowed, field: 'redirect_to' }),
      step('refused after claiming its key', refused, 403),
      step('retry of the refused request', retried, 403),
    ];
  },
  'request-token': async (world) => {
    const client = await registerOAuthClient(world.call, world.demo.personal_access_token);
    const exchange = async (verifier?: string) => {
      const { verifier: real, challenge } = pkce();
      const code = await authorizationCode(world.call, world.demo.personal_access_token, client, {
        challenge,
      });
      return tokenRequest(world.call, client, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier ?? real,
        redirect_uri: REDIRECT_URI,
      });
    };
    const refresh = (refreshToken: string) =>
      tokenRequest(world.call, client, { grant_type: 'refresh_token', refresh_token: refreshToken });
    const issued = await exchange();
    const rotated = await refresh(issued.body?.refresh_token);
    // The replaced refresh token again: its family is revoked.
    const replayed = await refresh(issued.body?.refresh_token);
    const afterReplay = await refresh(rotated.body?.refresh_token);
    // A wrong verifier spends the code.
    const guessed = await exchange(pkce().verifier);
    return [
      step('exchange a code', issued, 200),
      step('refresh (rotation)', rotated, 200),
      step('replay the replaced refresh token', replayed, 400),
      step('the family is revoked: its current refresh token too', afterReplay, 400),
      step('a wrong code_verifier', guessed, 400),
    ];
  },
  'revoke-token': async (world) => {
    const client = await registerOAuthClient(world.call, world.demo.personal_access_token);
    const first = await issueTokens(world.call, world.demo.personal_access_token, client);
    const second = await issueTokens(world.call, world.demo.personal_access_token, client);
    const revoke = (token: string) =>
      world.call('POST', '/v1/oauth2/revoke', clientRequest(client, { token }));
    return [
      step('an access token, alone', await revoke(first.access_token), 200),
      step('a refresh token, with its grant', await revoke(second.refresh_token as string), 200),
    ];
  },
  'introspect-token': async (world) => {
    const client = await registerOAuthClient(world.call, world.demo.personal_access_token);
    const tokens = await issueTokens(world.call, world.demo.personal_access_token, client);
    const reply = await world.call(
      'POST',
      '/v1/oauth2/introspect',
      clientRequest(client, { token: tokens.access_token }),
    );
    return [step('an active access token', reply, 200)];
  },
  userinfo: async (world) => {
    const user = await world.call('GET', '/v1/oauth2/userinfo', { token: world.demo.personal_access_token });
    const organization = await world.call('GET', '/v1/oauth2/userinfo', { token: oauth.organizationToken });
    return [
      step('the user, with the email scope', user, 200),
      step("an organization's OAuth token, with the profile scope", organization, 200),
    ];
  },
  'list-webhook-deliveries': async (world) => {
    const list = (query: string) =>
      world.call('GET', `/v1/webhooks/deliveries${query}`, { token: world.demo.personal_access_token });
    const endpointId = world.demo.webhook_endpoint_ids[1] as string;
    return [
      step("the organization's list, newest first", await list('?limit=2'), 200),
      step(
        "an endpoint's failures (its list's view)",
        await list(`?endpoint_id=${endpointId}&succeeded=false`),
        200,
      ),
      step('past the end (counts only)', await list('?page=50'), 200),
    ];
  },
  'redeliver-webhook-event': async (world) => {
    const event = await seedWebhookEvent(
      world.table,
      world.demo.organization_id,
      world.demo.webhook_endpoint_ids[1] as string,
    );
    const redeliver = (idempotencyKey: string, id: string) =>
      world.call('POST', `/v1/webhooks/events/${id}/redeliver`, {
        token: world.demo.personal_access_token,
        headers: { 'idempotency-key': idempotencyKey },
      });
    const unknown = randomUUID();
    return [
      step('redeliver', await redeliver(key('redeliver'), event.id), 202),
      step('replay with the same key', await redeliver(key('redeliver'), event.id), 202),
      // Refused after the key is claimed: the claim is released, so the retry runs again.
      step('an unknown event, refused after claiming its key', await redeliver(key('unknown'), unknown), 404),
      step('retry of the refused request', await redeliver(key('unknown'), unknown), 404),
    ];
  },
  // The webhook pipeline's functions, driven as their event source mappings drive them.
  'webhook-relay': relayScenario,
  'webhook-deliverer': delivererScenario,
} satisfies Record<FunctionName, Scenario>;

/** An authorization request of the demo client, PKCE S256 included (its challenge need not match anything). */
function authorizationQuery(clientId: string): string {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid',
    state: 'iam',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  }).toString();
}

/**
 * The relay, given one stream batch as its event source mapping gives it: the insert of a fresh
 * customer's `customer.created` outbox item (its organization's endpoint list read, one webhook event
 * recorded per subscribed endpoint, the messages queued), the insert of a Redeliver request (its
 * event's round read, its message queued) and the TTL removal of a delivery list entry (a tombstone
 * and the list's count down, in one transaction).
 */
async function relayScenario(world: World): Promise<Step[]> {
  const { endpoint } = await createWebhookEndpoint(world.admin, {
    organizationId: world.demo.organization_id,
    url: `https://hooks.example/iam-relay/${run}`,
    events: ['customer.created'],
  });
  const customer = await freshCustomer(world);
  const [outboxItem] = await outboxItems(world.table, 'customer', customer.id);
  const delivered = await seedWebhookEvent(world.table, world.demo.organization_id, endpoint.id);
  const [entry] = await deliveryEntries(world, endpoint.id);
  // A Redeliver of the delivered event, as the API writes it: its next round and the request.
  await startRound(world.table, delivered.id, [world.demo.organization_id], new Date().toISOString(), null);
  const [redelivery] =
    (
      await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
          ExpressionAttributeValues: {
            ':pk': keys.webhookEvent(delivered.id).PK,
            ':sk': REDELIVERY_SORT_KEY_PREFIX,
          },
        }),
      )
    ).Items ?? [];
  if (!outboxItem || !entry || !redelivery) throw new Error('the relay scenario found nothing to relay');
  // What DynamoDB's TTL does; the stream then carries the removal.
  await world.table.doc.send(
    new DeleteCommand({ TableName: world.table.name, Key: { PK: entry.PK, SK: entry.SK } }),
  );
  const queue = new LocalQueue({ visibilityTimeoutSeconds: 30 });
  const relay = createRelay({ ...world.depsFor('webhook-relay'), queue });
  const ran = await relay({
    Records: [
      {
        eventName: 'INSERT',
        dynamodb: {
          Keys: marshall({ PK: outboxItem.PK, SK: outboxItem.SK }),
          NewImage: marshall(outboxItem),
        },
      },
      {
        eventName: 'INSERT',
        dynamodb: {
          Keys: marshall({ PK: redelivery.PK, SK: redelivery.SK }),
          NewImage: marshall(redelivery),
        },
      },
      { eventName: 'REMOVE', dynamodb: { Keys: marshall({ PK: entry.PK, SK: entry.SK }) } },
    ],
  } as DynamoDBStreamEvent).then(
    () => 'ran',
    () => 'failed',
  );
  const recordedId = webhookEventId(String(outboxItem.id), endpoint.id);
  const recorded = await getWebhookEvent(world.table, recordedId);
  const counted = (await list(world, `?endpoint_id=${endpoint.id}`)).body.pagination?.total_count;
  const queued = (await queue.receive({ max: 10 })).map((m) => JSON.parse(m.body) as DeliveryMessage);
  const roundOf = (id: string) => queued.find((m) => m.webhook_event_id === id)?.round;
  return [
    { what: 'a stream batch relayed', got: ran, expected: 'ran' },
    { what: 'a webhook event for the endpoint', got: String(recorded?.status), expected: 'pending' },
    { what: 'its message queued', got: String(roundOf(recordedId)), expected: '1' },
    { what: "the redelivered event's new round queued", got: String(roundOf(delivered.id)), expected: '2' },
    { what: "the expired entry off its list's count", got: String(counted), expected: '0' },
  ];
}

/**
 * The deliverer, given one SQS message as its event source mapping gives it: the webhook event and
 * its endpoint read in one batch, the secret opened, the POST answered `410 Gone`, and the attempt
 * recorded with the endpoint disabled (its item and list entries) in one transaction.
 */
async function delivererScenario(world: World): Promise<Step[]> {
  const receiver = await startReceiver(() => ({ status: 410, body: 'gone' }));
  try {
    const { endpoint } = await loopbackEndpoint(world, receiver.url, ['customer.created']);
    const eventId = randomUUID();
    const at = new Date().toISOString();
    const webhookEvent = {
      id: webhookEventId(eventId, endpoint.id),
      event_id: eventId,
      endpoint_id: endpoint.id,
      organization_id: world.demo.organization_id,
      type: 'customer.created',
      payload: envelope('customer.created', at, { id: randomUUID() }),
      created_at: at,
      modified_at: null,
      status: 'pending' as const,
      round: 1,
      attempts: 0,
      last_http_code: null,
    };
    await recordWebhookEvent(world.table, webhookEvent);
    const queue = new LocalQueue({ visibilityTimeoutSeconds: 30 });
    await queue.send(
      JSON.stringify({ webhook_event_id: webhookEvent.id, endpoint_id: endpoint.id, round: 1 }),
    );
    const deps = world.depsFor('webhook-deliverer');
    const deliver = createDeliverer({
      ...deps,
      webhooks: { ...deps.webhooks, addresses: { allowLoopback: true } },
      queue,
      timeoutMs: 2_000,
    });
    const result = await deliver(sqsEvent(await queue.receive({ max: 10 }), 'arn:aws:sqs:local:0:iam')).catch(
      () => undefined,
    );
    const after = await getWebhookEvent(world.table, webhookEvent.id);
    const stored = await world.call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, {
      token: world.demo.personal_access_token,
    });
    return [
      { what: 'the batch handled', got: String(result?.batchItemFailures.length), expected: '0' },
      { what: 'the receiver reached', got: String(receiver.deliveries.length), expected: '1' },
      {
        what: 'the attempt recorded',
        got: `${after?.status} ${after?.last_http_code}`,
        expected: 'failed 410',
      },
      {
        what: 'the endpoint disabled (410 Gone)',
        got: String(stored.body.disabled_reason),
        expected: 'endpoint_gone',
      },
    ];
  } finally {
    await receiver.close();
  }
}

/** Items of an object's outbox partition, as stored (the relay's stream image). */
async function outboxItems(table: World['table'], kind: string, id: string) {
  const result = await table.doc.send(
    new QueryCommand({
      TableName: table.name,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': `${partitions.event}${kind.toUpperCase()}#${id}` },
      ConsistentRead: true,
    }),
  );
  return result.Items ?? [];
}

/** The `created_at` entries of an endpoint's delivery list. */
async function deliveryEntries(world: World, endpointId: string) {
  const result = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :f)',
      ExpressionAttributeValues: {
        ':pk': listKeys.partition(
          'deliveryList',
          endpointDeliveriesOwner(world.demo.organization_id, endpointId),
        ),
        ':f': 'created_at#',
      },
      ConsistentRead: true,
    }),
  );
  return (result.Items ?? []) as { PK: string; SK: string }[];
}

const list = (world: World, query: string) =>
  world.call('GET', `/v1/webhooks/deliveries${query}`, { token: world.demo.personal_access_token });

/** One element of one DynamoDB statement of one function's policy, and the policy without it. */
export interface Element {
  operation: FunctionName;
  label: string;
  without: StackPolicies;
}

export const asList = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
export const LEADING_KEYS = ['ForAllValues:StringLike', 'dynamodb:LeadingKeys'] as const;
const STREAM_ACTIONS = [
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
];

/** The resource's own words: an index name for an index ARN, else `the table`. */
function describeResource(resource: unknown): string {
  const text = JSON.stringify(resource);
  const index = Object.values(indexNames).find((name) => new RegExp(`/index/${name}"`).test(text));
  return index === undefined ? 'the table' : `index ${index}`;
}

/**
 * Every element whose removal must break the operation: each action, and each action for each of its
 * leading keys and each of its resources. CDK merges statements that differ only in their actions, so
 * an action is taken out of a shared statement into one of its own before its key or resource goes:
 * `ConditionCheckItem for ORG#*` is tested even when it shares a statement with `BatchGetItem`.
 */
export function elementsOf(policies: StackPolicies, operation: FunctionName): Element[] {
  const statements = policies.functions[operation]?.statements ?? [];
  const elements: Element[] = [];
  const replacing = (index: number, replacement: RawStatement[]): StackPolicies => {
    const copy = structuredClone(policies);
    (copy.functions[operation] as { statements: RawStatement[] }).statements.splice(index, 1, ...replacement);
    return copy;
  };
  for (const [index, statement] of statements.entries()) {
    const actions = asList(statement.Action ?? []);
    if (statement.Effect !== 'Allow' || !actions.every((action) => action.startsWith('dynamodb:'))) continue;
    // The relay's stream reads are made by its event source mapping (AWS's poller, under the
    // function's role), never by its code: no scenario can show them, so none is mutated here
    // (test/infra/webhooks.test.ts pins them to the table's stream).
    if (actions.every((action) => STREAM_ACTIONS.includes(action))) continue;
    const resources = asList(statement.Resource);
    const keys = asList(statement.Condition?.[LEADING_KEYS[0]]?.[LEADING_KEYS[1]] ?? []);
    const on = [...new Set(resources.map(describeResource))].join(', ');
    for (const action of actions) {
      const others: RawStatement[] =
        actions.length > 1 ? [{ ...statement, Action: actions.filter((a) => a !== action) }] : [];
      const alone = (change: Partial<RawStatement>): RawStatement[] => [
        ...others,
        { ...structuredClone(statement), Action: action, ...change },
      ];
      elements.push({
        operation,
        label: `${action} (${keys.join(' ')} on ${on})`,
        without: replacing(index, others),
      });
      if (keys.length > 1) {
        for (const key of keys) {
          const condition = {
            ...statement.Condition,
            [LEADING_KEYS[0]]: { [LEADING_KEYS[1]]: keys.filter((k) => k !== key) },
          };
          elements.push({
            operation,
            label: `${action} for ${key} (on ${on})`,
            without: replacing(index, alone({ Condition: condition })),
          });
        }
      }
      if (resources.length > 1) {
        for (const [position, resource] of resources.entries()) {
          elements.push({
            operation,
            label: `${action} on ${describeResource(resource)}`,
            without: replacing(index, alone({ Resource: resources.filter((_, i) => i !== position) })),
          });
        }
      }
    }
  }
  return elements;
}

/** Every function with a table grant: the operations', the scheduled ones and the webhook pipeline's (keyed by name alike). */
export const functionsWithGrants = [...operations, ...scheduledFunctions, ...pipelineFunctions];
export const names = functionsWithGrants.map((fn) => fn.name);

/**
 * OAuth access tokens: a live one acting for the demo organization, and one of a client deleted since.
 * Every operation that takes a personal access token takes these too, reading the token with its
 * client's liveness item in one batch; the deleted client's token walks that path to its refusal.
 */
export const oauth = { organizationToken: '', deletedClientToken: '' };

/** Whether an operation is granted the OAuth authentication batch (token + client liveness). */
const takesOAuthTokens = (name: FunctionName): boolean =>
  (operations.find((operation) => operation.name === name)?.access ?? []).some(
    (grant: { actions: readonly string[]; leadingKeys: readonly string[] }) =>
      grant.actions.includes('dynamodb:BatchGetItem') && grant.leadingKeys.includes('oauthClientLive'),
  );

/** The operation called with the deleted client's access token: the batch read, then the 401. */
async function oauthStep(world: World, name: FunctionName): Promise<Step[]> {
  if (!takesOAuthTokens(name)) return [];
  const operation = operations.find((candidate) => candidate.name === name);
  if (!operation) return [];
  const path = operation.path.replace(/\{\w+\}/g, randomUUID());
  const reply = await world.call(operation.method, path, { token: oauth.deletedClientToken });
  return [step("a deleted client's OAuth access token", reply, 401)];
}

/** A scenario and, for the operations that take them, the OAuth access token step. */
export const runScenario = async (name: FunctionName, world: World): Promise<Step[]> => {
  run++;
  return [...(await scenarios[name](world)), ...(await oauthStep(world, name))];
};

/** The steps that did not answer what the full grant must make them answer. */
export const brokenSteps = (steps: Step[]): Step[] => steps.filter((s) => s.got !== s.expected);

/**
 * The world every run shares: one seeded table, and the two OAuth access tokens of `oauth` (a live
 * one, and one of a client deleted since). Each run gets its own proxy and clients over it
 * (`underPolicies`).
 */
export async function createIamWorld(prefix = 'iam'): Promise<World> {
  const shared = await createWorld(prefix);
  const pat = shared.demo.personal_access_token;
  const live = await registerOAuthClient(shared.call, pat, { scope: 'openid profile' });
  oauth.organizationToken = (
    await issueTokens(shared.call, pat, live, { scope: 'openid profile' })
  ).access_token;
  const doomed = await registerOAuthClient(shared.call, pat);
  oauth.deletedClientToken = (await issueTokens(shared.call, pat, doomed)).access_token;
  const removed = await shared.call('DELETE', `/v1/oauth2/register/${doomed.client_id}`, {
    token: doomed.registration_access_token,
  });
  if (removed.status !== 204) throw new Error(`Delete Client answered ${removed.status}`);
  return shared;
}

/** One run of a function's scenario under given policies: its steps, and every verdict the proxy gave. */
export interface ScenarioRun {
  steps: Step[];
  /** Every request context judged, of every function the scenario called, in the order judged. */
  verdicts: Verdict[];
  /** The proxy's refusals (the last verdict of each refused request). */
  denials: Verdict[];
  /** The table the requests named (their resources' ARNs are this table's). */
  tableName: string;
}

/** Runs a function's scenario under `policies` (its own proxy and clients over `shared`'s table). */
export async function runUnder(
  shared: World,
  policies: StackPolicies,
  name: FunctionName,
): Promise<ScenarioRun> {
  const verdicts: Verdict[] = [];
  const world = await underPolicies(shared, policies, { onVerdict: (verdict) => verdicts.push(verdict) });
  try {
    const steps = await runScenario(name, world);
    return { steps, verdicts, denials: [...world.iam.denials], tableName: world.table.name };
  } finally {
    await world.drop();
  }
}

/**
 * The recorded requests of `functionName` that `policies` refuse, judged offline by the proxy's own
 * evaluator and statement resolution. Only that function's requests: the other functions a scenario
 * calls keep their policies.
 */
export function offlineRefusals(
  recorded: ScenarioRun,
  policies: StackPolicies,
  functionName: FunctionName,
): RequestContext[] {
  const statements = resolvedStatements(policies, functionName, {
    tableName: recorded.tableName,
    region: LOCAL_REGION,
  });
  return recorded.verdicts
    .filter((verdict) => verdict.functionName === functionName)
    .map((verdict) => verdict.context)
    .filter((context) => !decide(statements, context).allowed);
}

/** The recorded requests of the element's function that its policy without the element refuses. */
export const refusedWithout = (recorded: ScenarioRun, element: Element): RequestContext[] =>
  offlineRefusals(recorded, element.without, element.operation);

/** A request context in words that do not depend on a run's fresh ids: `dynamodb:GetItem on <arn>`. */
export const describeContext = (context: RequestContext): string =>
  `${context.action} on ${context.resource}`;
