/**
 * Request quotas (shared/http/quota.ts) through the real handlers under their deployed policies, with
 * small quotas and a clock held inside one window: a tenant at 10× its quota is refused past it
 * (429, `Retry-After`, the documented body) while another tenant sees no 429 at all; instances sharing
 * the counters never admit more than the quota between them; the OAuth client endpoints count per
 * source address before reading a credential; a bucket known to be spent costs no more writes.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import type { QuotaSettings } from '#shared/domain/limits.ts';
import { QuotaKeeper } from '#shared/http/quota.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { documentedReply } from '../support/contract.ts';
import { createWorld, inProcessApi, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('quotas');
});
afterAll(() => world?.drop());

const QUOTAS: QuotaSettings = {
  credential: { limit: 12, windowSeconds: 60, shards: 3, lease: 2 },
  tenant: { limit: 12, windowSeconds: 60, shards: 3, lease: 2 },
  oauthClient: { limit: 5, windowSeconds: 60, shards: 1, lease: 1 },
  address: { limit: 4, windowSeconds: 60, shards: 2, lease: 1 },
};

/** A clock held at the start of a fresh window (+1 s), moved by hand. */
function heldClock() {
  let at = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 1000 + Math.floor(Math.random() * 1000);
  return { now: () => new Date(at), advance: (ms: number) => (at += ms) };
}

/** Quota writes sent by the keepers (every DynamoDB call a keeper makes is one). */
let quotaWrites = 0;

/** An API whose functions enforce `settings`, `instances` keepers per function (picked in turn). */
function quotaApi(settings: QuotaSettings, now: () => Date, instances = 1) {
  const keepers = new Map<string, QuotaKeeper[]>();
  const counted = (table: Dependencies['table']): Dependencies['table'] => ({
    name: table.name,
    doc: new Proxy(table.doc, {
      get: (target, property) =>
        property === 'send'
          ? (...args: Parameters<typeof target.send>) => {
              quotaWrites++;
              return target.send(...args);
            }
          : Reflect.get(target, property),
    }),
  });
  let turn = 0;
  const depsFor = (name: string): Dependencies => {
    const deps = world.depsFor(name);
    let mine = keepers.get(name);
    if (!mine) {
      mine = Array.from({ length: instances }, () => new QuotaKeeper(counted(deps.table), settings, now));
      keepers.set(name, mine);
    }
    return { ...deps, quotas: mine[turn++ % instances] as QuotaKeeper };
  };
  return inProcessApi(depsFor);
}

async function tenant(): Promise<{ token: string }> {
  const { admin } = world;
  const organization = await createOrganization(admin, { name: `Quota ${randomUUID().slice(0, 8)}` });
  const user = await createUser(admin, { email: `quota-${randomUUID()}@x.example` });
  await addMember(admin, organization.id, user.id);
  return createPersonalAccessToken(admin, { userId: user.id, scope: 'products:read' });
}

const count = (replies: Reply[], status: number) => replies.filter((reply) => reply.status === status).length;

describe('per tenant and credential', () => {
  it('tenant A at 10× its quota: A is refused past it (429, Retry-After), tenant B meanwhile sees zero 429s', async () => {
    const clock = heldClock();
    const call = quotaApi(QUOTAS, clock.now, 2);
    const [a, b] = await Promise.all([tenant(), tenant()]);
    const list = (token: string) => call('GET', '/v1/products/', { token });
    const aReplies: Reply[] = [];
    const bReplies: Reply[] = [];
    // A sends 120 (10× its 12) in waves of 12 while B, well within its own quota, sends 6 (one every
    // other wave): a quota's floor is the quota less what leases may strand (below), so B at half of
    // it is always admitted.
    for (let wave = 0; wave < 12; wave++) {
      const [aWave, bReply] = await Promise.all([
        Promise.all(Array.from({ length: wave < 10 ? 12 : 0 }, () => list(a.token))),
        wave % 2 === 0 ? list(b.token) : undefined,
      ]);
      aReplies.push(...aWave);
      if (bReply) bReplies.push(bReply);
    }
    expect(count(bReplies, 429)).toBe(0);
    expect(count(bReplies, 200)).toBe(6);
    // Never more than the quota; at least the quota less what the leases may strand (shards × (lease-1)
    // + instances × (lease-1)).
    expect(count(aReplies, 200)).toBeLessThanOrEqual(12);
    expect(count(aReplies, 200)).toBeGreaterThanOrEqual(12 - 3 - 2);
    expect(count(aReplies, 200) + count(aReplies, 429)).toBe(120);
    const refused = documentedReply('listProducts', aReplies.find((reply) => reply.status === 429) as Reply);
    const retryAfter = Number(new Headers(refused.headers).get('retry-after'));
    expect(refused.body).toEqual({
      error: 'TooManyRequests',
      detail: `Rate limit exceeded: retry after ${retryAfter} seconds.`,
    });
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // The next window admits A again.
    clock.advance(60_000);
    expect((await list(a.token)).status).toBe(200);
  });

  it('two instances sharing the counters never admit more than the quota between them', async () => {
    const clock = heldClock();
    const call = quotaApi(QUOTAS, clock.now, 3);
    const { token } = await tenant();
    const replies = await Promise.all(
      Array.from({ length: 40 }, () => call('GET', '/v1/products/', { token })),
    );
    expect(count(replies, 200)).toBeLessThanOrEqual(12);
    expect(count(replies, 200) + count(replies, 429)).toBe(40);
  });

  it('a bucket seen spent costs no write in that instance until its window ends', async () => {
    const clock = heldClock();
    const call = quotaApi(QUOTAS, clock.now, 1);
    const { token } = await tenant();
    // Which request first finds every shard known full depends on the random shard picks (a take
    // tries two shards, so a bucket can be refused while a third still has room): send until a 429
    // costs no write, then every later one in the window must cost none.
    const send = async () => {
      const before = quotaWrites;
      const reply = await call('GET', '/v1/products/', { token });
      return { status: reply.status, writes: quotaWrites - before };
    };
    let admitted = 0;
    let settled = false;
    for (let n = 0; n < 40 && !settled; n++) {
      const { status, writes } = await send();
      if (status === 200) admitted++;
      settled = status === 429 && writes === 0;
    }
    expect(settled, 'a 429 that costs no write within 40 requests').toBe(true);
    expect(admitted).toBeLessThanOrEqual(QUOTAS.credential.limit);
    const later = [];
    for (let n = 0; n < 5; n++) later.push(await send());
    expect(later).toEqual(Array.from({ length: 5 }, () => ({ status: 429, writes: 0 })));
  });
});

describe('the OAuth client endpoints', () => {
  it('count per source address before any credential is read: past 4, a 429 instead of 401', async () => {
    const clock = heldClock();
    const call = quotaApi(QUOTAS, clock.now);
    const token = () =>
      call('POST', '/v1/oauth2/token', {
        body: 'grant_type=client_credentials&client_id=nobody&client_secret=wrong',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const replies: Reply[] = [];
    for (let n = 0; n < 7; n++) replies.push(await token());
    expect(replies.map((reply) => reply.status)).toEqual([401, 401, 401, 401, 429, 429, 429]);
    documentedReply('requestToken', replies[4] as Reply);
  });
});
