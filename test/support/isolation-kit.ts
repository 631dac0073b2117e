/**
 * The isolation matrix's shared parts (test/integration/isolation.test.ts): the fixture the suite
 * builds (another organization's and deleted objects), the probe each operation's card gives, and
 * the row builders several cards share.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { createCustomer, createCustomerSession } from '#scripts/admin/commands.ts';
import {
  clientRequest,
  issueTokens,
  type RegisteredClient,
  registerClient as registerOAuthClient,
} from './oauth.ts';
import type { Reply, World } from './world.ts';

/** What the suite's `beforeAll` made: the ids that must answer as unknown ones, and who asks. */
export interface IsolationFixture {
  world: World;
  /** A second organization's PAT with every scope, a user in both organizations, a user in none. */
  bothOrgsPat: string;
  noOrgPat: string;
  deletedProductId: string;
  deletedCustomerId: string;
  /** External ids: of a customer deleted through the API, of a customer of the other organization. */
  deletedExternalId: string;
  foreignExternalId: string;
  deletedEndpointId: string;
  otherDeletedEndpointId: string;
  sessions: { customerId: string; token: string }[];
}

let world: World;
let deletedCustomerId: string;
let deletedExternalId: string;
let foreignExternalId: string;
let deletedEndpointId: string;
let otherDeletedEndpointId: string;

/** Gives the row builders below the suite's fixture (its `beforeAll` calls this). */
export function useIsolationFixture(fixture: IsolationFixture): void {
  ({
    world,
    deletedCustomerId,
    deletedExternalId,
    foreignExternalId,
    deletedEndpointId,
    otherDeletedEndpointId,
  } = fixture);
}

/**
 * The matrix: every operation that names a resource by id is probed with ids of another tenant (or,
 * for the portal, another customer) and of deleted items, each answered exactly like an unknown id.
 * Each operation's row is in its card (test/cards/<operation>.ts, slot `isolation`): a new operation
 * has none until its card is written, or says why it names no resource.
 */
export interface Probe {
  /** The ids that must be indistinguishable from an unknown one, with a label each. */
  ids(): Promise<[string, string][]>;
  send(id: string): Promise<Reply>;
  /** How the answer to an unknown id refuses it; default: a 4xx. */
  refuses?(reply: Reply): void;
}
/**
 * An operation's row (its card's `isolation`): a probe, built from the suite's fixture when the test
 * runs, or why the operation names no resource.
 */
export type IsolationRow = { namesNoResource: string } | ((fixture: IsolationFixture) => Probe);

/** A list filtered by the id: an unknown id gives an empty page (200), not an error. */
export const emptyPage = (reply: Reply) => {
  expect(reply.status).toBe(200);
  expect(reply.body.items).toEqual([]);
};

/** A subscription of the other organization is changed by nobody but its own members. */
export function lifecycleRow(method: 'PATCH' | 'DELETE'): Probe {
  return {
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      expect(theirs.status).toBe(201);
      return [['subscription of another organization', theirs.body.id as string]];
    },
    send: (id) =>
      world.call(method, `/v1/subscriptions/${id}`, {
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { revoke: true } } : {}),
      }),
  };
}

/** An endpoint of another organization, or a deleted one, is read and changed by nobody. */
export function endpointRow(method: 'GET' | 'PATCH', suffix = '', body?: unknown): Probe {
  return {
    ids: async () => [
      ['endpoint of another organization', world.demo.other_organization.webhook_endpoint_id],
      ['deleted endpoint', deletedEndpointId],
      ['deleted endpoint of another organization', otherDeletedEndpointId],
    ],
    send: (id) =>
      world.call(method, `/v1/webhooks/endpoints/${id}${suffix}`, {
        token: world.demo.personal_access_token,
        ...(body === undefined ? {} : { body }),
      }),
  };
}

/** Subscriptions of another customer of the organization and of another organization's customer. */
export async function othersSubscriptions(): Promise<[string, string][]> {
  const other = world.demo.other_organization;
  const subscribe = async (token: string, product_id: string, customer_id: string) => {
    const reply = await world.call('POST', '/v1/subscriptions/', {
      token,
      body: { product_id, customer_id },
    });
    expect(reply.status).toBe(201);
    return reply.body.id as string;
  };
  return [
    [
      'subscription of another customer of the organization',
      await subscribe(
        world.demo.personal_access_token,
        world.demo.free_product_id,
        world.demo.second_customer_id,
      ),
    ],
    [
      'subscription of another organization',
      await subscribe(other.personal_access_token, other.free_product_id, other.customer_id),
    ],
  ];
}

let subscriberless: Promise<string> | undefined;
/** The session of a fresh customer of the organization, who subscribes to nothing. */
export function subscriberlessSession(): Promise<string> {
  subscriberless ??= createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `nothing+${randomUUID()}@x.example`,
  }).then(async (customer) => (await createCustomerSession(world.admin, { customer })).token);
  return subscriberless;
}

/** A customer session reads and changes its own customer's subscriptions, nobody else's. */
export function portalRow(method: 'GET' | 'PATCH' | 'DELETE'): Probe {
  return {
    ids: othersSubscriptions,
    send: (id) =>
      world.call(method, `/v1/customer-portal/subscriptions/${id}`, {
        token: world.demo.customer_session_token,
        ...(method === 'PATCH' ? { body: { cancel_at_period_end: true } } : {}),
      }),
  };
}

export async function registered(
  token: string,
): Promise<{ client_id: string; registration_access_token: string }> {
  const reply = await world.call('POST', '/v1/oauth2/register', {
    token,
    body: { client_name: 'isolation', redirect_uris: ['https://app.example/cb'] },
  });
  expect(reply.status).toBe(201);
  return reply.body;
}

/**
 * RFC 7592: a registration token reaches its own client only. Another user's client, another client
 * of the same user and a deleted client, named with this client's token, answer as an unknown id.
 */
export function registrationRow(method: 'GET' | 'PUT' | 'DELETE'): Probe {
  let mine: { client_id: string; registration_access_token: string } | undefined;
  return {
    ids: async () => {
      const theirs = await registered(world.demo.other_organization.personal_access_token);
      const sibling = await registered(world.demo.personal_access_token);
      const deleted = await registered(world.demo.personal_access_token);
      const removed = await world.call('DELETE', `/v1/oauth2/register/${deleted.client_id}`, {
        token: deleted.registration_access_token,
      });
      expect(removed.status).toBe(204);
      return [
        ['client of another user', theirs.client_id],
        ['another client of the same user', sibling.client_id],
        ['deleted client', deleted.client_id],
      ];
    },
    send: async (id) => {
      mine ??= await registered(world.demo.personal_access_token);
      return world.call(method, `/v1/oauth2/register/${id}`, {
        token: mine.registration_access_token,
        ...(method === 'PUT'
          ? { body: { client_id: id, client_name: 'isolation', redirect_uris: ['https://app.example/cb'] } }
          : {}),
      });
    },
  };
}

/** A change or delete by id: another organization's customer and a deleted one answer as unknown. */
export function customerRow(method: 'PATCH' | 'DELETE'): Probe {
  return {
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call(method, `/v1/customers/${id}`, {
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { name: 'isolation' } } : {}),
      }),
  };
}

/** By external id: another organization's customer's and a deleted customer's answer as unknown ones. */
export function externalIdRow(method: 'GET' | 'PATCH' | 'DELETE'): Probe {
  return {
    ids: async () => [
      ['external id of another organization’s customer', foreignExternalId],
      ['external id of a deleted customer', deletedExternalId],
    ],
    send: (id) =>
      world.call(method, `/v1/customers/external/${encodeURIComponent(id)}`, {
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { name: 'isolation' } } : {}),
      }),
  };
}

/**
 * Revocation and introspection of another client's tokens (of the same user, of another user)
 * answer exactly as an unknown token: RFC 7009's 200 `{}`, RFC 7662's `{"active": false}`.
 */
export function clientTokenRow(path: string, unknownAnswer: object): Probe {
  let mine: RegisteredClient | undefined;
  return {
    refuses: (reply) => {
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual(unknownAnswer);
    },
    ids: async () => {
      const pat = world.demo.personal_access_token;
      const otherPat = world.demo.other_organization.personal_access_token;
      const sibling = await issueTokens(world.call, pat, await registerOAuthClient(world.call, pat));
      const foreign = await issueTokens(
        world.call,
        otherPat,
        await registerOAuthClient(world.call, otherPat),
      );
      return [
        ['access token of another client of the same user', sibling.access_token],
        ['refresh token of another client of the same user', sibling.refresh_token as string],
        ["access token of another user's client", foreign.access_token],
      ];
    },
    send: async (id) => {
      mine ??= await registerOAuthClient(world.call, world.demo.personal_access_token, {
        token_endpoint_auth_method: 'client_secret_basic',
      });
      return world.call('POST', path, clientRequest(mine, { token: id }));
    },
  };
}

export function authorizationRequest(clientId: string): URLSearchParams {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: 'https://app.example/cb',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  });
}
