/**
 * The fault-injection suites' operations and checks (test/integration/faults.test.ts, the fast
 * tier; test/integration/faults-matrix.test.ts, the whole matrix): for each operation of the route
 * table the DynamoDB calls a successful request makes, how to prepare a fresh request, and what the
 * table must show after it; and what a case of a fault at one call must show.
 *
 * An operation needs no entry here: by default its card's sample (test/cards/<operation>.ts) is sent
 * against the bench fixture's items (test/bench/fixture.ts, written into the world's table), its
 * calls are those the sample makes once without a fault (recorded by `useFaultWorld`), and each case
 * must show the contract (the sample's status after a healed fault, the 503 after a lasting one,
 * never a 500). A change made in one write call is all or nothing by itself; an operation whose
 * sample makes several write calls is refused there until it has an entry below, whose `verify`
 * checks that no half of its change is left behind. The entries below are the operations whose
 * table checks (or set-up on the demo data) the default cannot derive.
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import {
  addMember,
  createCustomer,
  createCustomerSession,
  createOrganization,
  createPersonalAccessToken,
  createProduct,
  createUser,
  createWebhookEndpoint,
} from '#scripts/admin/commands.ts';
import { readCustomerEntries } from '#shared/data/customers.ts';
import { readRange, textKeyPrefix } from '#shared/data/listing.ts';
import { getMeter, meterListing } from '#shared/data/meters.ts';
import { productListing, productListOwners } from '#shared/data/products.ts';
import { record, type StoredSubscription } from '#shared/data/records.ts';
import { projectSubscriptionCounts } from '#shared/data/subscription-counts.ts';
import { indexNames, type Key, keys, partitions, REDELIVERY_SORT_KEY_PREFIX } from '#shared/data/table.ts';
import { usageEventId } from '#shared/data/usage-events.ts';
import { CAPS } from '#shared/domain/limits.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { type OperationName, operations } from '#shared/operations.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { fixtureItems } from '#test/bench/fixture.ts';
import { sampleRequest } from '#test/bench/samples.ts';
import { operationCards } from '#test/cards/index.ts';
import { expectDocumented } from './contract.ts';
import { FAULT_CLASSES, type Fault, type FaultCase, type FaultKind, faultyApi, isWrite } from './faults.ts';
import { freshMeteredSubscription } from './iam-kit.ts';
import {
  authorizationCode,
  clientRequest,
  issueTokens,
  pkce,
  REDIRECT_URI,
  type RegisteredClient as RegisteredOAuthClient,
  registerClient as registerOAuthClient,
  registrants,
  type Tokens,
} from './oauth.ts';
import { seedWebhookEvent } from './outbox.ts';
import { expectListedInStep } from './products.ts';
import { nextSequence, sharedSegmentsRegistered as registerSharedSegments } from './subscription-counts.ts';
import { listPartition, scanTable } from './table-state.ts';
import type { Reply, World } from './world.ts';

let world: World;

/** The production client's attempts per call (createDocumentClient: maxAttempts 3). */
export const MAX_ATTEMPTS = 3;
/** Attempts of a write the transaction conflicted with (shared/data/dynamo.ts). */
const CONFLICT_ATTEMPTS = 3;

type Outcome = 'done' | 'not-done' | 'at-most-once';

export interface Prepared {
  method: string;
  url: string;
  /** The bearer credential; none for the endpoints a client authenticates at itself. */
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Checks the table after the request. */
  verify(reply: Reply, outcome: Outcome): Promise<void>;
  /** Filled by `send`: the keys of the outbox items the request's transactions tried to write. */
  outbox?: Key[];
}

export interface FaultOp {
  operationId: string;
  /** Its calls were recorded from its card's sample, not written down (the default). */
  recorded?: true;
  success: number;
  /** The DynamoDB calls of a successful request, in order. */
  calls: string[];
  prepare(): Promise<Prepared>;
}

const query = async (pk: string, prefix: string) =>
  (
    await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        IndexName: indexNames.gsi1,
        KeyConditionExpression: 'GSI1PK = :pk AND begins_with(GSI1SK, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
      }),
    )
  ).Items ?? [];

const get = async (key: { PK: string; SK: string }) =>
  (
    await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: key, ConsistentRead: true }),
    )
  ).Item;

/**
 * A customer's subscriptions as its list holds them once the stream's projection has counted them
 * (the relay's, `shared/data/subscription-counts.ts`, run here over the customer's subscriptions as
 * stored): the entries of its customer list, by subscription id (every entry of a subscription
 * carries the same copy), and the counts' total (its segments' registry items carry no count).
 */
async function customerList(organizationId: string, customerId: string) {
  const stored = await query(`CUSTOMER#${customerId}`, 'SUBSCRIPTION#');
  await projectSubscriptionCounts(
    world.table,
    stored.map((item) => ({ sequence: nextSequence(), subscription: record<StoredSubscription>(item) })),
  );
  const items =
    (
      await world.table.doc.send(
        new QueryCommand({
          TableName: world.table.name,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': `LIST#SUBSCRIPTION-CUSTOMER#${organizationId}#${customerId}` },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];
  const counted = items
    .filter((i) => String(i.SK).startsWith('#COUNT#') && i.entry_count !== undefined)
    .reduce((sum, i) => sum + Number(i.entry_count), 0);
  const entries = items.filter((i) => !String(i.SK).startsWith('#COUNT#'));
  return { counted, entries };
}

const countFor = (outcome: Outcome, found: number) => {
  if (outcome === 'done') expect(found).toBe(1);
  else if (outcome === 'not-done') expect(found).toBe(0);
  else expect(found).toBeLessThanOrEqual(1);
};

/** The Get Subscription cases' metered subscription, made once per fault world. */
let meteredSubscription: ReturnType<typeof freshMeteredSubscription> | undefined;

const faultOps = {
  'create-client': {
    success: 201,
    // The token, then one transaction: the client and its registrant's cap counter.
    calls: ['GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      // A user of its own, so that its clients can be counted.
      const user = await createUser(world.admin, { email: `faults+${crypto.randomUUID()}@x.example` });
      const { token } = await createPersonalAccessToken(world.admin, {
        userId: user.id,
        scope: 'user:write',
      });
      return {
        method: 'POST',
        url: '/v1/oauth2/register',
        token,
        body: { redirect_uris: ['https://app.example/cb'], client_name: 'faults' },
        async verify(reply, outcome) {
          const clients = await query(`USER#${user.id}`, 'OAUTHCLIENT#');
          countFor(outcome, clients.length);
          if (reply.status === 201) {
            expect(clients[0]?.client_id).toBe(reply.body.client_id);
            expect(clients[0]?.client_secret_hash).toBe(hashSecret(reply.body.client_secret));
          }
        },
      };
    },
  },
  'create-subscription': {
    success: 201,
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      await sharedSegmentsRegistered();
      const customer = await createCustomer(world.admin, {
        organizationId: world.demo.organization_id,
        email: `faults+${crypto.randomUUID()}@x.example`,
      });
      const outbox: Key[] = [];
      return {
        method: 'POST',
        url: '/v1/subscriptions/',
        token: world.demo.personal_access_token,
        body: {
          product_id: world.demo.free_product_id,
          customer_id: customer.id,
          metadata: { via: 'faults' },
        },
        outbox,
        async verify(reply, outcome) {
          const subscriptions = await query(`CUSTOMER#${customer.id}`, 'SUBSCRIPTION#');
          countFor(outcome, subscriptions.length);
          // Listed exactly when written: four entries and one count per subscription.
          const listed = await customerList(world.demo.organization_id, customer.id);
          expect(listed.counted).toBe(subscriptions.length);
          expect(listed.entries).toHaveLength(4 * subscriptions.length);
          await expectEventsWithChange(outbox, subscriptions.length === 1, 3);
          for (const subscription of subscriptions) {
            // Never a subscription without the items it refers to.
            expect(await get(keys.customer(subscription.customer_id as string))).toBeDefined();
            expect(await get(keys.product(subscription.product_id as string))).toBeDefined();
            expect(subscription.metadata).toBe('{"via":"faults"}');
          }
          if (reply.status === 201) expect(subscriptions[0]?.id).toBe(reply.body.id);
        },
      };
    },
  },
  'ingest-events': {
    success: 200,
    // The token, the customers named (one BatchGetItem), the event's conditional put, its name counted.
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'PutItemCommand', 'UpdateItemCommand'],
    async prepare() {
      const externalId = `faults-${crypto.randomUUID()}`;
      const name = `faults-${crypto.randomUUID()}`;
      const body = {
        events: [{ name, customer_id: world.demo.customer_id, external_id: externalId, metadata: { n: 1 } }],
      };
      const eventKey = keys.usageEvent(usageEventId(world.demo.organization_id, externalId));
      return {
        method: 'POST',
        url: '/v1/events/ingest',
        token: world.demo.personal_access_token,
        body,
        async verify(reply, outcome) {
          const stored = await get(eventKey);
          // A fault after the event's put (its name's count) leaves the event stored: never half of it.
          if (outcome === 'done') expect(stored).toBeDefined();
          if (stored) {
            expect(stored.GSI1PK).toMatch(/^UEVLIST#/);
            expect(stored.metadata).toBe('{"n":1}');
          }
          if (reply.status === 200) expect(reply.body).toEqual({ inserted: 1, duplicates: 0 });
          // The client's retry of the whole batch: stored once in the end, counted once.
          const retried = await world.call('POST', '/v1/events/ingest', {
            token: world.demo.personal_access_token,
            body,
          });
          expect(retried.status).toBe(200);
          expect(retried.body).toEqual(
            stored ? { inserted: 0, duplicates: 1 } : { inserted: 1, duplicates: 0 },
          );
          expect(await get(eventKey)).toBeDefined();
        },
      };
    },
  },
  'list-wallets': {
    success: 200,
    calls: ['GetItemCommand', 'GetItemCommand', 'QueryCommand'],
    async prepare() {
      return {
        method: 'GET',
        url: '/v1/customer-portal/wallets/?sorting=balance&limit=5',
        token: world.demo.customer_session_token,
        async verify(reply) {
          if (reply.status !== 200) return;
          expect(reply.body.pagination).toEqual({ total_count: 14, max_page: 3 });
          expect(reply.body.items).toHaveLength(5);
        },
      };
    },
  },
  'delete-webhook-endpoint': endpointFault('DELETE', '', (before, after) => {
    // Marked deleted and disabled, and out of the list, in one write: never one without the others.
    const deleted = after.item?.deleted_at !== null;
    expect(after.item?.enabled).toBe(!deleted);
    expect(after.entries).toHaveLength(deleted ? 0 : 3);
    expect(before.entries).toHaveLength(3);
    return deleted;
  }),
  'create-customer-session': {
    success: 201,
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const customer = await createCustomer(world.admin, {
        organizationId: world.demo.organization_id,
        email: `faults+${crypto.randomUUID()}@x.example`,
      });
      return {
        method: 'POST',
        url: '/v1/customer-sessions/',
        token: world.demo.personal_access_token,
        body: { customer_id: customer.id },
        async verify(reply, outcome) {
          const sessions = await query(`CUSTOMER#${customer.id}`, 'TOKEN#');
          countFor(outcome, sessions.length);
          if (reply.status === 201) expect(sessions[0]?.token_id).toBe(reply.body.id);
        },
      };
    },
  },
  'get-subscription': {
    success: 200,
    // Token, subscription, its customer and product; a metered one: its meter, the meter's usage.
    calls: ['GetItemCommand', 'GetItemCommand', 'BatchGetItemCommand', 'BatchGetItemCommand', 'QueryCommand'],
    async prepare() {
      // One metered subscription of the demo customer for every case (the read changes nothing).
      meteredSubscription ??= freshMeteredSubscription(world);
      const { id } = await meteredSubscription;
      return {
        method: 'GET',
        url: `/v1/subscriptions/${id}`,
        token: world.demo.personal_access_token,
        async verify(reply) {
          // The exact figure or a 503: never a partial one.
          if (reply.status === 200)
            expect(reply.body.meters).toMatchObject([{ consumed_units: 2, amount: 1 }]);
        },
      };
    },
  },
  'get-client': {
    success: 200,
    calls: ['GetItemCommand'],
    async prepare() {
      const client = await registerClient();
      return {
        method: 'GET',
        url: `/v1/oauth2/register/${client.client_id}`,
        token: client.registration_access_token,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.client_id).toBe(client.client_id);
        },
      };
    },
  },
  'update-client': {
    success: 200,
    calls: ['GetItemCommand', 'UpdateItemCommand'],
    async prepare() {
      const client = await registerClient();
      return {
        method: 'PUT',
        url: `/v1/oauth2/register/${client.client_id}`,
        token: client.registration_access_token,
        body: {
          client_id: client.client_id,
          redirect_uris: ['https://app.example/new'],
          client_name: 'renamed',
        },
        async verify(_, outcome) {
          const stored = await get(keys.oauthClient(client.client_id));
          const registration = stored?.registration as { client_name: string; redirect_uris: string[] };
          // The whole registration changes in one write, with its modification time.
          const renamed = registration.client_name === 'renamed';
          expect(registration.redirect_uris).toEqual([
            renamed ? 'https://app.example/new' : 'https://app.example/cb',
          ]);
          expect(stored?.modified_at !== null).toBe(renamed);
          countFor(outcome, renamed ? 1 : 0);
        },
      };
    },
  },
  'delete-client': {
    success: 204,
    calls: ['GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      // A client that was issued tokens: it has a liveness item for the delete to remove.
      const client = await registerOAuthClient(world.call, await registrant());
      await issueTokens(world.call, world.demo.personal_access_token, client);
      return {
        method: 'DELETE',
        url: `/v1/oauth2/register/${client.client_id}`,
        token: client.registration_access_token,
        async verify(_, outcome) {
          const stored = await get(keys.oauthClient(client.client_id));
          // Deleted, registration token revoked and liveness item gone in one write: never one without the others.
          const deleted = stored?.deleted_at !== null;
          expect(stored?.registration_token_hash === undefined).toBe(deleted);
          expect((await get(keys.oauthClientLive(client.client_id))) === undefined).toBe(deleted);
          countFor(outcome, deleted ? 1 : 0);
        },
      };
    },
  },
  'update-subscription': lifecycleFault('PATCH', { cancel_at_period_end: true }),
  'revoke-subscription': lifecycleFault('DELETE'),
  'list-customers': {
    success: 200,
    // The token, the organization's list markers (a container's first page of it: each case makes
    // an organization of its own), one batch of the counts of its 16 customer-list shards (it is
    // marked: not the old partition), the one non-empty shard's entries, the page's customer. An
    // organization of its own, with one customer: how many shards a page reads depends on how many
    // hold customers, and the demo organization's fill up with every case running beside this one.
    calls: [
      'GetItemCommand',
      'BatchGetItemCommand',
      'BatchGetItemCommand',
      'QueryCommand',
      'BatchGetItemCommand',
    ],
    async prepare() {
      const organization = await createOrganization(world.admin, { name: 'Faults', defaultCurrency: 'usd' });
      const owner = await createUser(world.admin, { email: `faults+${crypto.randomUUID()}@x.example` });
      await addMember(world.admin, organization.id, owner.id);
      const { token } = await createPersonalAccessToken(world.admin, {
        userId: owner.id,
        scope: 'customers:read',
      });
      const customer = await createCustomer(world.admin, {
        organizationId: organization.id,
        email: `faults+${crypto.randomUUID()}@x.example`,
      });
      return {
        method: 'GET',
        url: '/v1/customers/?limit=10',
        token,
        async verify(reply) {
          if (reply.status === 200) {
            expect(reply.body.items.map((c: { id: string }) => c.id)).toEqual([customer.id]);
            expect(reply.body.pagination.total_count).toBe(1);
          }
        },
      };
    },
  },
  'create-customer': {
    success: 201,
    // The token, its organization's guard marker, the transaction.
    calls: ['GetItemCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const email = `faults+${crypto.randomUUID()}@x.example`;
      const outbox: Key[] = [];
      return {
        method: 'POST',
        url: '/v1/customers/',
        token: world.demo.personal_access_token,
        body: { email, external_id: `faults-${email}` },
        outbox,
        async verify(reply, outcome) {
          const guard = await get(keys.customerEmail(world.demo.organization_id, email));
          await expectEventsWithChange(outbox, Boolean(guard), 1);
          const external = await get(keys.customerExternalId(world.demo.organization_id, `faults-${email}`));
          // The customer and both guards are written together or not at all.
          const customer = guard ? await get(keys.customer(guard.customer_id as string)) : undefined;
          expect(Boolean(external)).toBe(Boolean(guard));
          expect(Boolean(customer)).toBe(Boolean(guard));
          // And its list entries with them.
          const entries = await customerEntries(textKeyPrefix('email', email, 'equals'));
          expect(entries.length).toBe(guard ? 1 : 0);
          countFor(outcome, guard ? 1 : 0);
          if (reply.status === 201) expect(guard?.customer_id).toBe(reply.body.id);
        },
      };
    },
  },
  'list-subscriptions': {
    success: 200,
    // Auth, the customer list's segment counts, its one (active) segment, the page's subscriptions
    // (slim entries), the embedded items.
    calls: ['GetItemCommand', 'QueryCommand', 'QueryCommand', 'BatchGetItemCommand', 'BatchGetItemCommand'],
    async prepare() {
      const customer = await createCustomer(world.admin, {
        organizationId: world.demo.organization_id,
        email: `faults+${crypto.randomUUID()}@x.example`,
      });
      const created = await world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: { product_id: world.demo.free_product_id, customer_id: customer.id },
      });
      return {
        method: 'GET',
        url: `/v1/subscriptions/?customer_id=${customer.id}`,
        token: world.demo.personal_access_token,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.items).toEqual([created.body]);
        },
      };
    },
  },
  'list-customer-subscriptions': {
    success: 200,
    // Auth, the customer list's segment counts, its one (active) segment, the page's subscriptions
    // (slim entries), the batch.
    calls: ['GetItemCommand', 'QueryCommand', 'QueryCommand', 'BatchGetItemCommand', 'BatchGetItemCommand'],
    async prepare() {
      const { customer, session, subscription } = await portalCustomer();
      return {
        method: 'GET',
        url: '/v1/customer-portal/subscriptions/',
        token: session,
        async verify(reply) {
          if (reply.status === 200)
            expect(reply.body.items.map((s: { id: string }) => s.id)).toEqual([subscription]);
          expect((await customerList(world.demo.organization_id, customer)).counted).toBe(1);
        },
      };
    },
  },
  'get-customer-subscription': {
    success: 200,
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'GetItemCommand'],
    async prepare() {
      const { session, subscription } = await portalCustomer();
      return {
        method: 'GET',
        url: `/v1/customer-portal/subscriptions/${subscription}`,
        token: session,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.id).toBe(subscription);
        },
      };
    },
  },
  'update-customer-subscription': portalCancelFault('PATCH', { cancel_at_period_end: true }),
  'cancel-customer-subscription': portalCancelFault('DELETE'),
  consent: {
    success: 303,
    calls: ['GetItemCommand', 'GetItemCommand', 'PutItemCommand'],
    async prepare() {
      // A client of its own, so that its codes can be counted.
      const client = await registerClient();
      return {
        method: 'POST',
        url: '/v1/oauth2/consent',
        token: world.demo.personal_access_token,
        body: {
          action: 'allow',
          ...Object.fromEntries(new URLSearchParams(authorizationQuery(client.client_id))),
        },
        async verify(reply, outcome) {
          const codes = await codesOf(client.client_id);
          countFor(outcome, codes.length);
          if (reply.status === 303) {
            const code = new URL(reply.headers.location as string).searchParams.get('code') as string;
            expect(codes[0]?.PK).toBe(keys.authorizationCode(hashSecret(code)).PK);
          }
        },
      };
    },
  },
  'update-customer': customerChangeFault('PATCH', 'id'),
  'update-customer-external': customerChangeFault('PATCH', 'external'),
  'delete-customer': customerChangeFault('DELETE', 'id'),
  'delete-customer-external': customerChangeFault('DELETE', 'external'),
  'create-product': {
    success: 201,
    calls: ['GetItemCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const name = `faults ${crypto.randomUUID()}`;
      const outbox: Key[] = [];
      return {
        method: 'POST',
        url: '/v1/products/',
        token: world.demo.personal_access_token,
        body: { name, recurring_interval: 'month', prices: [{ amount_type: 'fixed', price_amount: 0 }] },
        outbox,
        async verify(reply, outcome) {
          const found = await productsNamed(name);
          countFor(outcome, found.length);
          await expectEventsWithChange(outbox, found.length === 1, 1);
          // The product and its entries in every list are written together or not at all.
          for (const id of found) await expectListedInStep(world.table, world.demo.organization_id, id);
          if (reply.status === 201) expect(found).toEqual([reply.body.id]);
        },
      };
    },
  },
  'list-products': {
    success: 200,
    // The token, the organization's list markers (a container's first page of it: each case makes
    // an organization of its own), one batch of the counts of the view's 16 shards (it is marked:
    // not the old partition), the one non-empty shard's entries. An organization of its own, with
    // one archived product (and one live one, outside the view): how many shards a page reads
    // depends on how many hold products, and the demo organization's fill up with every case
    // running beside this one.
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'BatchGetItemCommand', 'QueryCommand'],
    async prepare() {
      const organization = await createOrganization(world.admin, { name: 'Faults', defaultCurrency: 'usd' });
      const owner = await createUser(world.admin, { email: `faults+${crypto.randomUUID()}@x.example` });
      await addMember(world.admin, organization.id, owner.id);
      const { token } = await createPersonalAccessToken(world.admin, {
        userId: owner.id,
        scope: 'products:read',
      });
      const product = (archived: boolean) =>
        createProduct(world.admin, {
          organizationId: organization.id,
          name: archived ? 'Faults archived' : 'Faults live',
          recurringInterval: 'month',
          priceAmount: 0,
          currency: 'usd',
          archived,
        });
      const archived = await product(true);
      await product(false);
      return {
        method: 'GET',
        url: '/v1/products/?is_archived=true&sorting=name&limit=1',
        token,
        async verify(reply) {
          if (reply.status !== 200) return;
          expect(reply.body.items.map((p: { id: string }) => p.id)).toEqual([archived.id]);
          expect(reply.body.pagination.total_count).toBe(1);
        },
      };
    },
  },
  'update-product': {
    success: 200,
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const product = await createProduct(world.admin, {
        organizationId: world.demo.organization_id,
        name: `faults ${crypto.randomUUID()}`,
        recurringInterval: 'month',
        priceAmount: 100,
        currency: 'usd',
      });
      const outbox: Key[] = [];
      return {
        method: 'PATCH',
        url: `/v1/products/${product.id}`,
        token: world.demo.personal_access_token,
        body: { name: `renamed ${product.id}`, is_archived: true, prices: [{ amount_type: 'free' }] },
        outbox,
        async verify(_, outcome) {
          const stored = await expectListedInStep(world.table, world.demo.organization_id, product.id);
          // Every field changes in one write, the entries moving with them: never some without the others.
          const changed = stored?.name !== product.name;
          await expectEventsWithChange(outbox, changed, 1);
          expect(stored?.is_archived).toBe(changed);
          expect(
            stored?.prices
              .filter((p) => !p.is_archived)
              .map((p) => (p.amount_type === 'fixed' ? p.price_amount : null)),
          ).toEqual([changed ? 0 : 100]);
          countFor(outcome, changed ? 1 : 0);
        },
      };
    },
  },
  'update-meter': {
    success: 200,
    // The token, the meter (strongly consistent), one transaction.
    calls: ['GetItemCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const meter = newMeter(
        {
          name: `faults ${crypto.randomUUID()}`,
          filter: { conjunction: 'and', clauses: [] },
          aggregation: { func: 'count' },
        },
        world.demo.organization_id,
        world.admin.now(),
      );
      await storeNewMeter(world.table, meter);
      const outbox: Key[] = [];
      const entriesIn = async (archived: boolean) =>
        (
          await world.table.doc.send(
            new QueryCommand({
              TableName: world.table.name,
              KeyConditionExpression: 'PK = :pk',
              ExpressionAttributeValues: {
                ':pk': `${partitions.meterList}${meter.organization_id}#is_archived=${archived}`,
              },
              ConsistentRead: true,
            }),
          )
        ).Items?.filter((item) => item.id === meter.id) ?? [];
      return {
        method: 'PATCH',
        url: `/v1/meters/${meter.id}`,
        token: world.demo.personal_access_token,
        body: { name: `renamed ${meter.id}`, is_archived: true },
        outbox,
        async verify(_, outcome) {
          const stored = await getMeter(world.table, meter.id);
          // Name, archive, entries and event change in one write: never some without the others.
          const changed = stored?.name !== meter.name;
          expect(stored?.archived_at !== null).toBe(changed);
          expect(await entriesIn(true)).toHaveLength(changed ? Object.keys(meterListing.fields).length : 0);
          expect(await entriesIn(false)).toHaveLength(changed ? 0 : Object.keys(meterListing.fields).length);
          await expectEventsWithChange(outbox, changed, 1);
          countFor(outcome, changed ? 1 : 0);
        },
      };
    },
  },
  'create-webhook-endpoint': {
    success: 201,
    calls: ['GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const url = `https://hooks.example/faults/${crypto.randomUUID()}`;
      const owner = await endpointOwner();
      return {
        method: 'POST',
        url: '/v1/webhooks/endpoints',
        token: owner.token,
        body: { url, format: 'raw', events: ['customer.created'] },
        async verify(reply, outcome) {
          const entries = (await listEntries(owner.organizationId)).filter((entry) => entry.url === url);
          const ids = [...new Set(entries.map((entry) => entry.id as string))];
          // The endpoint and its three entries are written together or not at all.
          for (const id of ids) {
            expect(await get(keys.webhookEndpoint(id))).toBeDefined();
            expect(entries.filter((entry) => entry.id === id)).toHaveLength(3);
          }
          countFor(outcome, ids.length);
          if (reply.status === 201) expect(ids).toEqual([reply.body.id]);
        },
      };
    },
  },
  'request-token': {
    success: 200,
    calls: ['GetItemCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const client = await registerOAuthClient(world.call, await registrant());
      const { verifier, challenge } = pkce();
      const code = await authorizationCode(world.call, world.demo.personal_access_token, client, {
        challenge,
      });
      const request = clientRequest(client, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT_URI,
      });
      return {
        method: 'POST',
        url: '/v1/oauth2/token',
        headers: request.headers as Record<string, string>,
        body: request.body,
        async verify(reply, outcome) {
          // The code is spent exactly when the family and its tokens exist: never one without the other.
          const spent = (await get(keys.authorizationCode(hashSecret(code)))) === undefined;
          const families = await familiesOf(client.client_id);
          expect(families.length).toBe(spent ? 1 : 0);
          countFor(outcome, families.length);
          if (reply.status === 200) {
            const access = await get(keys.token(hashSecret(reply.body.access_token)));
            expect(access?.grant_id).toBe(families[0]?.grant_id);
            expect(await get(keys.token(hashSecret(reply.body.refresh_token)))).toBeDefined();
          }
        },
      };
    },
  },
  'list-webhook-endpoints': {
    success: 200,
    // The token, the list's count (its shards, one Query), one Query of its entries.
    calls: ['GetItemCommand', 'QueryCommand', 'QueryCommand'],
    async prepare() {
      return {
        method: 'GET',
        // One criterion, ascending, on unique values: the entries' order is exact, so the page is one
        // Query of two entries however many endpoints share a millisecond.
        url: '/v1/webhooks/endpoints?limit=2&sorting=url',
        token: world.demo.personal_access_token,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.items.length).toBeGreaterThan(0);
        },
      };
    },
  },
  'get-webhook-endpoint': {
    success: 200,
    calls: ['GetItemCommand', 'GetItemCommand'],
    async prepare() {
      const id = world.demo.webhook_endpoint_ids[1] as string;
      return {
        method: 'GET',
        url: `/v1/webhooks/endpoints/${id}`,
        token: world.demo.personal_access_token,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.id).toBe(id);
        },
      };
    },
  },
  'revoke-token': clientTokenFault(
    '/v1/oauth2/revoke',
    ['GetItemCommand', 'GetItemCommand', 'UpdateItemCommand'],
    {
      async verify(_, outcome, tokens) {
        const access = await get(keys.token(hashSecret(tokens.access_token)));
        countFor(outcome, access?.revoked_at === null ? 0 : 1);
      },
    },
  ),
  'introspect-token': clientTokenFault('/v1/oauth2/introspect', ['GetItemCommand', 'GetItemCommand'], {
    async verify(reply, _, tokens, client) {
      if (reply.status === 200)
        expect(reply.body).toMatchObject({ active: true, client_id: client.client_id });
      expect(tokens.access_token).toMatch(/^polar_at_/);
    },
  }),
  'revoke-authorized-client': {
    success: 204,
    // The token, the user's grants (GSI1), the grant, the transaction ending it and its tokens.
    calls: ['GetItemCommand', 'QueryCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      // A client of its own with one grant: revoking it touches nothing else of the demo user's.
      const client = await registerOAuthClient(world.call, await registrant());
      const tokens = await issueTokens(world.call, world.demo.personal_access_token, client);
      return {
        method: 'DELETE',
        url: `/v1/oauth2/authorized-clients/${client.client_id}`,
        token: world.demo.personal_access_token,
        async verify(_, outcome) {
          // The grant and both its tokens end together, or none of them does.
          const access = await get(keys.token(hashSecret(tokens.access_token)));
          const refresh = await get(keys.token(hashSecret(tokens.refresh_token as string)));
          expect(access?.revoked_at === null).toBe(refresh?.revoked_at === null);
          countFor(outcome, access?.revoked_at === null ? 0 : 1);
        },
      };
    },
  },
  'update-webhook-endpoint': endpointFault('PATCH', '', (_, after, body) => {
    // The endpoint and its moved entries change together.
    const renamed = after.item?.name === (body as { name: string }).name;
    expect(after.entries).toHaveLength(3);
    for (const entry of after.entries) expect(entry.name).toBe(after.item?.name);
    return renamed;
  }),
  'reset-webhook-endpoint-secret': endpointFault('PATCH', '/secret', (before, after) => {
    const reset = after.item?.secret_ciphertext !== before.item?.secret_ciphertext;
    if (reset) expect(after.item?.previous_secret_ciphertext).toBe(before.item?.secret_ciphertext);
    for (const entry of after.entries) expect(entry.secret_ciphertext).toBe(after.item?.secret_ciphertext);
    return reset;
  }),
  'list-webhook-deliveries': {
    success: 200,
    // The token, each of the list's 4 shards' day counts (a Query each), each shard's entries (a
    // Query each, one shard after another), one batch of the page's attempts and payloads.
    calls: ['GetItemCommand', ...Array.from({ length: 8 }, () => 'QueryCommand'), 'BatchGetItemCommand'],
    async prepare() {
      // The lists of an endpoint of this case alone, holding its one attempt: how many reads a page
      // takes depends on the lists (a shard whose last entry read may still precede others is read
      // again), and the organization's lists grow with every case running beside this one. 17 of
      // 1,646 cases failed on those, with 9 entry Queries instead of 8 (faults-matrix, 2026-11-27).
      const endpointId = crypto.randomUUID();
      await seedWebhookEvent(world.table, world.demo.organization_id, endpointId);
      return {
        method: 'GET',
        url: `/v1/webhooks/deliveries?limit=2&endpoint_id=${endpointId}`,
        token: world.demo.personal_access_token,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.items.length).toBeGreaterThan(0);
        },
      };
    },
  },
  'redeliver-webhook-event': {
    success: 202,
    // The token, then one transaction: the next round and the request's redelivery item.
    calls: ['GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const event = await seedWebhookEvent(
        world.table,
        world.demo.organization_id,
        world.demo.webhook_endpoint_ids[1] as string,
      );
      return {
        method: 'POST',
        url: `/v1/webhooks/events/${event.id}/redeliver`,
        token: world.demo.personal_access_token,
        async verify(_, outcome) {
          // A retried write (a lost answer) starts the round once: never a round skipped.
          const stored = await get(keys.webhookEvent(event.id));
          const started = Number(stored?.round) - event.round;
          countFor(outcome, started);
          expect(stored).toMatchObject(
            started === 1 ? { status: 'pending', attempts: 0 } : { status: 'succeeded', attempts: 1 },
          );
          // The round and what queues it are one write: a redelivery item exactly when a round
          // started, and it is the one the round names (the relay sends only for that one).
          const requests = await redeliveryRequests(event.id);
          expect(requests).toEqual(started === 1 ? [stored?.round_request] : []);
        },
      };
    },
  },
} satisfies Partial<Record<OperationName, Omit<FaultOp, 'operationId'>>>;

/** The Redeliver requests recorded in a webhook event's partition (`keys.redelivery`). */
async function redeliveryRequests(webhookEventId: string): Promise<unknown[]> {
  const found = await world.table.doc.send(
    new QueryCommand({
      TableName: world.table.name,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
      ExpressionAttributeValues: {
        ':pk': keys.webhookEvent(webhookEventId).PK,
        ':sk': REDELIVERY_SORT_KEY_PREFIX,
      },
      ConsistentRead: true,
    }),
  );
  return (found.Items ?? []).map((item) => item.request);
}

/** Ids of the demo organization's products of this name (read from the name order of its list). */
async function productsNamed(name: string): Promise<string[]> {
  // Its 16 shards and the old, unsharded partition (`productListOwners`).
  const found = await Promise.all(
    productListOwners([world.demo.organization_id]).map((owner) =>
      readRange(world.table, productListing, owner, textKeyPrefix('name', name, 'equals')),
    ),
  );
  return found.flat().map((product) => product.id);
}

/** The demo organization's customer list entries in one key range. */
const customerEntries = (prefix: string) =>
  readCustomerEntries(world.table, [world.demo.organization_id], prefix);

/**
 * A change (a new e-mail address and name) or a delete of a fresh customer, by id or by external id:
 * the customer's read, then one transaction. The item, both e-mail guards and the list entries show
 * the change together or not at all.
 */
function customerChangeFault(
  method: 'PATCH' | 'DELETE',
  by: 'id' | 'external',
): Omit<FaultOp, 'operationId'> {
  return {
    success: method === 'PATCH' ? 200 : 204,
    // By external id: its guard, then the customer; a PATCH to a new address reads the
    // organization's guard marker before its transaction.
    calls: [
      'GetItemCommand',
      ...(by === 'id' ? ['GetItemCommand'] : ['BatchGetItemCommand', 'BatchGetItemCommand']),
      ...(method === 'PATCH' ? ['GetItemCommand'] : []),
      'TransactWriteItemsCommand',
    ],
    async prepare() {
      const email = `faults+${crypto.randomUUID()}@x.example`;
      const next = `moved+${crypto.randomUUID()}@x.example`;
      const externalId = `faults-${crypto.randomUUID()}`;
      const created = await world.call('POST', '/v1/customers/', {
        token: world.demo.personal_access_token,
        body: { email, name: 'Before', external_id: externalId },
      });
      const id = created.body.id as string;
      const outbox: Key[] = [];
      return {
        method,
        url: by === 'id' ? `/v1/customers/${id}` : `/v1/customers/external/${externalId}`,
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { email: next, name: 'After' } } : {}),
        outbox,
        async verify(_, outcome) {
          const item = await get(keys.customer(id));
          const oldGuard = await get(keys.customerEmail(world.demo.organization_id, email));
          const newGuard = await get(keys.customerEmail(world.demo.organization_id, next));
          const external = await get(keys.customerExternalId(world.demo.organization_id, externalId));
          const entries = (await customerEntries('name#')).filter((entry) => entry.id === id);
          const changed = method === 'PATCH' ? item?.name === 'After' : item?.deleted_at !== null;
          // customer.updated or customer.deleted: exactly when the change is there.
          await expectEventsWithChange(outbox, changed, 1);
          expect(Boolean(oldGuard)).toBe(!changed);
          expect(Boolean(external)).toBe(method === 'PATCH' || !changed);
          if (method === 'PATCH') {
            expect(Boolean(newGuard)).toBe(changed);
            expect(entries.map((entry) => [entry.name, entry.email])).toEqual([
              changed ? ['After', next] : ['Before', email],
            ]);
          } else {
            expect(entries).toHaveLength(changed ? 0 : 1);
          }
          countFor(outcome, changed ? 1 : 0);
        },
      };
    },
  };
}

/**
 * A client's request about one of its tokens (revocation, introspection), with a fresh client and a
 * fresh family each time: the client's read, the token's, and for a revocation the write.
 */
function clientTokenFault(
  path: string,
  calls: string[],
  check: {
    verify(reply: Reply, outcome: Outcome, tokens: Tokens, client: RegisteredOAuthClient): Promise<void>;
  },
): Omit<FaultOp, 'operationId'> {
  return {
    success: 200,
    calls,
    async prepare() {
      const client = await registerOAuthClient(world.call, await registrant());
      const tokens = await issueTokens(world.call, world.demo.personal_access_token, client);
      const request = clientRequest(client, { token: tokens.access_token });
      return {
        method: 'POST',
        url: path,
        headers: request.headers as Record<string, string>,
        body: request.body,
        verify: (reply, outcome) => check.verify(reply, outcome, tokens, client),
      };
    },
  };
}

/** The token families (grants) of a client: a full scan, every page (a test's view of the whole table). */
const familiesOf = (clientId: string) => itemsOf('OAUTHGRANT#', clientId);

/** Items of one partition prefix that belong to a client. */
async function itemsOf(prefix: string, clientId: string) {
  return (await scanTable(world.table)).filter(
    (item) => String(item.PK).startsWith(prefix) && item.client_id === clientId,
  );
}

/** An authorization request of a client registered with https://app.example/cb, PKCE S256 included. */
function authorizationQuery(clientId: string): string {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri:
      clientId === world.demo.oauth_client.client_id
        ? 'http://127.0.0.1:8080/callback'
        : 'https://app.example/cb',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  }).toString();
}

/** The authorization codes issued to a client. */
const codesOf = (clientId: string) => itemsOf('OAUTHCODE#', clientId);

/**
 * A lifecycle change of a fresh subscription: the read, the embedded customer and product, then the
 * conditional write with its events in one transaction. A revoke moves the subscription to the
 * `canceled` segment: whether the organization's and the product's lists have that segment
 * registered is read before the transaction (a `BatchGetItem`; the demo data's revoked subscriptions
 * registered it, so no registry item is put after). The stored subscription is either unchanged or
 * changed in every field at once, and its events exist exactly when it changed.
 */
function lifecycleFault(method: 'PATCH' | 'DELETE', body?: unknown): Omit<FaultOp, 'operationId'> {
  return {
    success: 200,
    calls: [
      'GetItemCommand',
      'GetItemCommand',
      'BatchGetItemCommand',
      ...(method === 'DELETE' ? ['BatchGetItemCommand'] : []),
      'TransactWriteItemsCommand',
    ],
    async prepare() {
      await sharedSegmentsRegistered();
      const created = await world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
      });
      const id = created.body.id as string;
      const outbox: Key[] = [];
      return {
        method,
        url: `/v1/subscriptions/${id}`,
        token: world.demo.personal_access_token,
        ...(body === undefined ? {} : { body }),
        outbox,
        async verify(_, outcome) {
          const stored = await get(keys.subscription(id));
          const changed = stored?.modified_at !== null;
          // PATCH cancels at period end (updated, canceled); DELETE revokes (updated, canceled, revoked).
          await expectEventsWithChange(outbox, changed, method === 'PATCH' ? 2 : 3);
          if (method === 'PATCH') {
            expect(stored?.cancel_at_period_end === true).toBe(changed);
            expect(stored?.ends_at === stored?.current_period_end).toBe(changed);
          } else {
            expect(stored?.status === 'canceled').toBe(changed);
            expect(stored?.ended_at !== null && stored?.ended_at !== undefined).toBe(changed);
          }
          countFor(outcome, changed ? 1 : 0);
          // The lists show the subscription as stored, whichever way the change went.
          const listed = await customerList(world.demo.organization_id, world.demo.customer_id);
          const entries = listed.entries.filter((entry) => entry.id === id);
          expect(entries).toHaveLength(4);
          // Slim entries keep the status and the period, not `modified_at` (a cancel at period end
          // writes none of them); a revoke moves them to the canceled segment with the item.
          for (const entry of entries) {
            expect(entry.status).toBe(stored?.status);
            expect(entry.current_period_end).toBe(stored?.current_period_end);
            expect(entry).not.toHaveProperty('metadata');
          }
        },
      };
    },
  };
}

let registering: { world: World; done: Promise<void> } | undefined;

/**
 * The `active` and `canceled` segments (free) of the demo organization's list and of its free
 * product's list registered in each of their 16 shards (once per world), as in a tenant that has
 * signed up and revoked before: the first subscription into a segment of a shard puts its registry
 * item after its transaction, and the create and revoke cases' calls are those of every later one.
 */
function sharedSegmentsRegistered(): Promise<void> {
  if (registering?.world !== world) {
    const done = registerSharedSegments(world.table, world.demo);
    registering = { world, done };
  }
  return (registering as { done: Promise<void> }).done;
}

/** The entries of an organization's webhook endpoint list (one per sort field of each endpoint). */
const listEntries = async (organizationId: string) =>
  (await listPartition(world.table, 'webhookEndpointList', organizationId)).entries;

interface EndpointState {
  item: Record<string, unknown> | undefined;
  entries: Record<string, unknown>[];
}

/**
 * A change to a fresh endpoint: the read, then one transaction. `judge` says from the state before
 * and after whether the change was applied, and checks that the endpoint and its list entries moved
 * together.
 */
function endpointFault(
  method: 'PATCH' | 'DELETE',
  suffix: string,
  judge: (before: EndpointState, after: EndpointState, body: unknown) => boolean,
): Omit<FaultOp, 'operationId'> {
  return {
    success: method === 'DELETE' ? 204 : 200,
    calls: ['GetItemCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const owner = await endpointOwner();
      const { endpoint } = await createWebhookEndpoint(world.admin, {
        organizationId: owner.organizationId,
        url: `https://hooks.example/faults/${crypto.randomUUID()}`,
      });
      const state = async (): Promise<EndpointState> => ({
        item: await get(keys.webhookEndpoint(endpoint.id)),
        entries: (await listEntries(owner.organizationId)).filter((entry) => entry.id === endpoint.id),
      });
      const before = await state();
      const body =
        method === 'PATCH' && suffix === '' ? { name: `faults ${crypto.randomUUID()}` } : undefined;
      return {
        method,
        url: `/v1/webhooks/endpoints/${endpoint.id}${suffix}`,
        token: owner.token,
        ...(body ? { body } : {}),
        async verify(_, outcome) {
          countFor(outcome, judge(before, await state(), body) ? 1 : 0);
        },
      };
    },
  };
}

/** A fresh customer of the demo organization with a session and one subscription. */
async function portalCustomer(): Promise<{ customer: string; session: string; subscription: string }> {
  const customer = await createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `faults+${crypto.randomUUID()}@x.example`,
  });
  const { token } = await createCustomerSession(world.admin, { customer });
  const created = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: customer.id },
  });
  return { customer: customer.id, session: token, subscription: created.body.id as string };
}

/**
 * A portal cancel at period end: the read of the customer, organization and subscription, the
 * product, then the conditional write (its slim list entries keep nothing it changes). The
 * subscription and its events are both written or both untouched.
 */
function portalCancelFault(method: 'PATCH' | 'DELETE', body?: unknown): Omit<FaultOp, 'operationId'> {
  return {
    success: 200,
    calls: ['GetItemCommand', 'BatchGetItemCommand', 'GetItemCommand', 'TransactWriteItemsCommand'],
    async prepare() {
      const { customer, session, subscription } = await portalCustomer();
      const outbox: Key[] = [];
      return {
        method,
        url: `/v1/customer-portal/subscriptions/${subscription}`,
        token: session,
        ...(body === undefined ? {} : { body }),
        outbox,
        async verify(_, outcome) {
          const stored = await get(keys.subscription(subscription));
          const changed = stored?.cancel_at_period_end === true;
          // Canceled at period end: updated, canceled, in the change's own transaction.
          await expectEventsWithChange(outbox, changed, 2);
          expect(stored?.ends_at === stored?.current_period_end).toBe(changed);
          countFor(outcome, changed ? 1 : 0);
          const listed = await customerList(world.demo.organization_id, customer);
          expect(listed.counted).toBe(1);
          expect(listed.entries).toHaveLength(4);
          // Slim entries keep nothing a cancel at period end changes: none is written either way.
          for (const entry of listed.entries) {
            expect(entry.status).toBe('active');
            expect(entry).not.toHaveProperty('cancel_at_period_end');
          }
        },
      };
    },
  };
}

/**
 * The cases register more clients than one user may (CAPS.oauthClients): with users of their own
 * (test/support/oauth.ts `registrants`), made for the world in use.
 */
let registrantsOf: { world: World; next: () => Promise<string> } | undefined;
function registrant(): Promise<string> {
  if (registrantsOf?.world !== world) registrantsOf = { world, next: registrants(world.admin) };
  return registrantsOf.next();
}

/**
 * An organization (and a webhooks:write token of a member) to hold one more webhook endpoint: the
 * cases make more than one organization may hold (CAPS.webhookEndpoints), a new one every
 * `CAPS.webhookEndpoints.limit` calls.
 */
let endpointOwners: { world: World; calls: number; current?: Promise<EndpointOwner> } | undefined;
interface EndpointOwner {
  organizationId: string;
  token: string;
}
function endpointOwner(): Promise<EndpointOwner> {
  if (endpointOwners?.world !== world) endpointOwners = { world, calls: 0 };
  const owners = endpointOwners;
  if (owners.calls++ % CAPS.webhookEndpoints.limit === 0) {
    owners.current = (async () => {
      const organization = await createOrganization(world.admin, { name: `Faults ${crypto.randomUUID()}` });
      const user = await createUser(world.admin, { email: `faults+${crypto.randomUUID()}@x.example` });
      await addMember(world.admin, organization.id, user.id);
      const { token } = await createPersonalAccessToken(world.admin, {
        userId: user.id,
        scope: 'webhooks:write',
      });
      return { organizationId: organization.id, token };
    })();
  }
  return owners.current as Promise<EndpointOwner>;
}

/** A fresh OAuth client, through Create Client, with its RFC 7592 credentials. */
async function registerClient(): Promise<{ client_id: string; registration_access_token: string }> {
  const reply = await world.call('POST', '/v1/oauth2/register', {
    token: await registrant(),
    body: { redirect_uris: ['https://app.example/cb'], client_name: 'faults' },
  });
  expect(reply.status).toBe(201);
  return reply.body;
}

type Operation = (typeof operations)[number];

/** Puts the fixture's items (back) into the world's table: the default cases' data. */
async function putFixture(): Promise<void> {
  await Promise.all(
    fixtureItems().map((Item) => world.table.doc.send(new PutCommand({ TableName: world.table.name, Item }))),
  );
}

/** The default case of an operation without an entry: its card's sample, its calls recorded first. */
function sampleFaultOp(operation: Operation, success: number, calls: string[]): FaultOp {
  return {
    operationId: operation.operationId,
    success,
    calls,
    async prepare() {
      const card = (await operationCards()).find((candidate) => candidate.name === operation.name);
      if (!card) throw new Error(`no card for ${operation.name}`);
      // A writing sample may have changed the fixture (a rename, a deletion): put it back first.
      if (calls.some(isWrite)) await putFixture();
      const { form, ...request } = sampleRequest(operation, card.sample);
      return {
        ...request,
        ...(form === undefined
          ? {}
          : {
              body: new URLSearchParams(form).toString(),
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
            }),
        // One write call at most (checked when recorded): all or nothing by itself.
        async verify() {},
      };
    },
  };
}

/**
 * Every operation of the route table, in its order (its entry above, or its card's sample), and the
 * extra ones below; filled by `useFaultWorld`.
 */
export const ops: FaultOp[] = [];

/**
 * The world the cases run in: each test file creates its own and hands it over first. Writes the
 * fixture's items and records the calls of each operation that has no entry above.
 */
export async function useFaultWorld(
  created: World,
  options: SendOptions = { retryDelay: 'none', requestTimeouts: 'patient' },
): Promise<void> {
  world = created;
  meteredSubscription = undefined;
  await putFixture();
  const cards = await operationCards();
  ops.length = 0;
  for (const [i, operation] of operations.entries()) {
    const entry: Omit<FaultOp, 'operationId'> | undefined = faultOps[operation.name as keyof typeof faultOps];
    if (entry) {
      ops.push({ operationId: operation.operationId, ...entry });
      continue;
    }
    const { status } = (cards[i] as (typeof cards)[number]).sample;
    const recording = sampleFaultOp(operation, status, []);
    const { reply, injector } = await send(recording, undefined, options);
    if (reply.status !== status)
      throw new Error(`${operation.name}: its sample answered ${reply.status}, its card says ${status}`);
    const calls = injector.attemptsByCall().map(([name]) => name);
    const writes = calls.filter(isWrite);
    if (writes.length > 1)
      throw new Error(
        `${operation.name}: its sample makes ${writes.length} write calls (${writes.join(', ')}); a failure between them could leave half a change, which the default cannot check: give it an entry in test/support/fault-operations.ts whose verify checks the table`,
      );
    ops.push({ ...sampleFaultOp(operation, status, calls), recorded: true });
  }
  ops.push(...extraOps);
}

/**
 * And one operation authenticated by an OAuth access token: the token and its client's liveness
 * item in one batch (the path every operation that takes a PAT takes for these tokens).
 */
const extraOps: FaultOp[] = [
  {
    operationId: 'getProduct',
    success: 200,
    calls: ['BatchGetItemCommand', 'GetItemCommand'],
    async prepare() {
      const client = await registerOAuthClient(world.call, await registrant());
      const { access_token } = await issueTokens(world.call, world.demo.personal_access_token, client);
      return {
        method: 'GET',
        url: `/v1/products/${world.demo.free_product_id}`,
        token: access_token,
        async verify(reply) {
          if (reply.status === 200) expect(reply.body.id).toBe(world.demo.free_product_id);
        },
      };
    },
  },
];
export const opNamed = (name: OperationName): FaultOp =>
  ops[operations.findIndex((op) => op.name === name)] as FaultOp;

/** Notes the outbox items (`EVENT#` puts) of every transaction a function sends. */
function recordOutbox(doc: DynamoDBDocumentClient, into: Key[]): void {
  doc.middlewareStack.add(
    (next) => async (args) => {
      const items = (args.input as { TransactItems?: { Put?: { Item?: Key } }[] }).TransactItems ?? [];
      for (const { Put } of items) {
        if (Put?.Item?.PK.startsWith(partitions.event)) into.push({ PK: Put.Item.PK, SK: Put.Item.SK });
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordOutbox' },
  );
}

/**
 * Every outbox item the request tried to write exists exactly when its change does: never a change
 * without its events, never an event without its change.
 */
async function expectEventsWithChange(outbox: Key[] | undefined, changed: boolean, expected: number) {
  const keys = [...new Map((outbox ?? []).map((key) => [`${key.PK} ${key.SK}`, key])).values()];
  if (changed) expect(keys).toHaveLength(expected);
  for (const key of keys) expect(Boolean(await get(key)), `${key.PK} ${key.SK}`).toBe(changed);
}

export interface SendOptions {
  prepared?: Prepared;
  /** The production back-off between the SDK's attempts, or none (the same attempts, no wait). */
  retryDelay: 'production' | 'none';
  /** The functions' own request timeouts, or patient ones (a slow machine's answer is no fault). */
  requestTimeouts: 'production' | 'patient';
}

/** One request of `op`, with `fault` injected in fresh clients. */
export async function send(op: FaultOp, fault: Fault | undefined, options: SendOptions) {
  const request = options.prepared ?? (await op.prepare());
  const outbox = request.outbox;
  const api = faultyApi(world, fault, {
    retryDelay: options.retryDelay,
    requestTimeouts: options.requestTimeouts,
    ...(outbox ? { configure: (doc) => recordOutbox(doc, outbox) } : {}),
  });
  try {
    const reply = await api.call(request.method, request.url, {
      ...(request.token !== undefined ? { token: request.token } : {}),
      ...(request.headers !== undefined ? { headers: request.headers } : {}),
      ...(request.body !== undefined ? { body: request.body } : {}),
    });
    return { reply, request, injector: api.injector };
  } finally {
    api.destroy();
  }
}

const asHttp = (reply: Reply) => ({
  status: reply.status,
  headers: new Headers(reply.headers),
  body: reply.body,
  text: reply.raw ?? '',
});

export function expectServiceUnavailable(op: FaultOp, reply: Reply): void {
  expect(reply.status).toBe(503);
  expect(reply.body).toEqual({ error: 'ServiceUnavailable', detail: expect.any(String) });
  expect(reply.headers['retry-after']).toMatch(/^\d+$/);
  expectDocumented(op.operationId, asHttp(reply));
}

/** Retried by the SDK (the same call again): every kind of the classes the SDK retries. */
const SDK_RETRIED: readonly FaultKind[] = [
  ...FAULT_CLASSES.throttling,
  ...FAULT_CLASSES['server-error'],
  ...FAULT_CLASSES.network,
];

export type Case = FaultCase<FaultOp>;

export const label = (c: Case) =>
  `${c.op.operationId} call ${c.call} (${c.op.calls[c.call - 1]}) ${c.kind} ${c.mode}`;

/** What one case must show: status, attempts seen by the middleware, table state. */
async function check(c: Case, options: SendOptions): Promise<void> {
  const { op, call, kind, mode } = c;
  const times =
    mode === 'persistent'
      ? Number.POSITIVE_INFINITY
      : kind === 'transaction-conflict' || kind === 'lost-response'
        ? 1
        : MAX_ATTEMPTS - 1;
  const { reply, request, injector } = await send(op, { kind, call, times }, options);
  try {
    await expectOutcome(c, reply, request, injector.attemptsByCall());
  } catch (error) {
    throw new Error(`${String(error)}\nattempts: ${JSON.stringify(injector.log)}`);
  }
}

async function expectOutcome(
  { op, call, kind, mode }: Case,
  reply: Reply,
  request: Prepared,
  attempts: [string, number][],
): Promise<void> {
  const command = op.calls[call - 1] as string;
  const write = isWrite(command);

  // Never a 500, never an internal name in the answer.
  expect(reply.status).not.toBe(500);
  expect(reply.raw ?? '').not.toMatch(/Exception|ECONNRESET|ETIMEDOUT|TimeoutError|stack/);

  if (mode === 'healed') {
    // Retried, then answered as if nothing happened.
    expect(reply.status).toBe(op.success);
    expectDocumented(op.operationId, asHttp(reply));
    if (SDK_RETRIED.includes(kind)) {
      // The SDK retried the same call; the request made no extra call.
      expect(attempts).toEqual(op.calls.map((name, i) => [name, i + 1 === call ? MAX_ATTEMPTS : 1]));
    } else if (kind === 'transaction-conflict') {
      // Not retried by the SDK (a 400): the data layer sends the write once more, at once.
      const calls = op.calls.map((name): [string, number] => [name, 1]);
      expect(attempts).toEqual([...calls.slice(0, call), [command, 1], ...calls.slice(call)]);
    } else {
      // lost-response: the SDK's second attempt finds the first one's work.
      expect(attempts).toEqual(op.calls.map((name, i) => [name, i + 1 === call ? 2 : 1]));
    }
    await request.verify(reply, 'done');
    return;
  }

  expectServiceUnavailable(op, reply);
  const before = op.calls.slice(0, call - 1).map((name): [string, number] => [name, 1]);
  if (kind === 'transaction-conflict') {
    expect(attempts).toEqual([
      ...before,
      ...Array.from({ length: CONFLICT_ATTEMPTS }, (): [string, number] => [command, 1]),
    ]);
  } else {
    // Every attempt the client allows, then nothing more: the request stops there.
    expect(attempts).toEqual([...before, [command, MAX_ATTEMPTS]]);
  }
  // A lost answer means the write was applied once; any other fault, not at all.
  await request.verify(reply, kind === 'lost-response' && write ? 'at-most-once' : 'not-done');
}

/**
 * Runs every case, `concurrency` at a time (the back-off delays overlap; DynamoDB Local is not
 * swamped): each case has its own clients (own retry quota) and its own customer, user or endpoint.
 * Returns the failures, one line each.
 */
export async function runCases(
  cases: readonly Case[],
  options: SendOptions & { concurrency: number },
): Promise<string[]> {
  const failures: string[] = [];
  const queue = [...cases];
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
        const current = c;
        await check(current, options).catch((error: unknown) =>
          failures.push(`${label(current)}: ${String(error)}`),
        );
      }
    }),
  );
  return failures;
}
