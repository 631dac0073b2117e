/**
 * Request quotas (shared/domain/limits.ts `QuotaSettings`), answered with 429 `TooManyRequests` and
 * `Retry-After` before the operation runs.
 *
 * Each bucket (a credential, a tenant, an OAuth client, a source address) has a fixed window of
 * `windowSeconds` and a quota of `limit` requests in it, split over `shards` counter items
 * (shared/data/quotas.ts), shard i taking at most its share (`limit / shards`, the remainder to the
 * first ones). A function instance takes a `lease` of requests from a random shard with one
 * conditional write and serves the next `lease - 1` requests of that bucket and window from memory:
 * a write per `lease` requests, not per request. A shard that refuses is remembered as full for the
 * rest of the window, so a bucket past its quota costs no write at all in that instance until the
 * window ends (a tenant at 10× its quota costs about what it costs at its quota).
 *
 * Accuracy: never more than `limit` requests per window are admitted (the shards' shares add up to
 * it). Fewer may be: requests leased but unused when the window ends (at most `lease - 1` per
 * instance), the less than `lease` left in a shard that refused a lease, and a refusal when the two
 * shards tried are full while another still has room. Fixed windows let up to 2 × `limit` through
 * across a window boundary. Hot items: each counter item is written at most `share / lease` times
 * per window plus one refusal per instance, and a new window is a new key; `npm run scale:model`
 * checks a tenant at its full quota against DynamoDB's per-partition limit.
 */

import type { Table } from '../data/dynamo.ts';
import { takeFromShard } from '../data/quotas.ts';
import { TooManyRequests } from '../domain/errors.ts';
import type { QuotaRule, QuotaSettings } from '../domain/limits.ts';
import type { Principal } from '../domain/principals.ts';

export type BucketName = keyof QuotaSettings;

interface LocalBucket {
  window: number;
  endsAt: number;
  tokens: number;
  full: Set<number>;
  /** The lease being taken for this bucket, if any: one at a time per instance. */
  leasing?: Promise<QuotaVerdict>;
}

/** What a take answers: admitted, or refused with the seconds until the window ends. */
export type QuotaVerdict = { admitted: true; refund: () => void } | { admitted: false; retryAfter: number };

/** One function instance's view of the quotas: its leases and the shards it has seen full. */
export class QuotaKeeper {
  private readonly local = new Map<string, LocalBucket>();

  constructor(
    private readonly table: Table,
    readonly settings: QuotaSettings,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** One request of `id` in bucket `name`. */
  async take(name: BucketName, id: string): Promise<QuotaVerdict> {
    const rule = this.settings[name];
    const nowSeconds = this.now().getTime() / 1000;
    const index = Math.floor(nowSeconds / rule.windowSeconds);
    const endsAt = (index + 1) * rule.windowSeconds;
    const retryAfter = Math.max(1, Math.ceil(endsAt - nowSeconds));
    const key = `${name}#${id}`;
    let state = this.local.get(key);
    if (!state || state.window !== index) {
      state = { window: index, endsAt, tokens: 0, full: new Set() };
      this.local.set(key, state);
      this.forgetPassedWindows(nowSeconds);
    }
    const bucket = state;
    // A request another bucket refuses gives its token back to this instance (same window only).
    const refund = () => {
      if (this.local.get(key) === bucket) bucket.tokens++;
    };
    // One lease in flight per bucket: concurrent requests of this instance (the local server serves
    // many at once; a Lambda instance one at a time) wait for it and then share its tokens, so an
    // instance never holds more than `lease - 1` unused tokens of a bucket (the accuracy above).
    // Without it, each of n concurrent requests took a lease of its own: up to n × (lease - 1)
    // stranded per instance (test/integration/quotas.test.ts found 6 of 12 admitted).
    while (state.leasing) await state.leasing.catch(() => undefined);
    if (state.tokens > 0) {
      state.tokens--;
      return { admitted: true, refund };
    }
    const leasing = this.lease(rule, key, state, { index, endsAt }, retryAfter, refund);
    state.leasing = leasing;
    try {
      return await leasing;
    } finally {
      if (state.leasing === leasing) state.leasing = undefined;
    }
  }

  /** Takes a lease from one of two open shards (a shard that refuses is remembered as full). */
  private async lease(
    rule: QuotaRule,
    key: string,
    state: LocalBucket,
    window: { index: number; endsAt: number },
    retryAfter: number,
    refund: () => void,
  ): Promise<QuotaVerdict> {
    const { index, endsAt } = window;
    for (let attempt = 0; attempt < 2; attempt++) {
      const shard = pickShard(rule.shards, state.full);
      if (shard === undefined) break;
      const share = shareOf(rule, shard);
      const lease = Math.max(1, Math.min(rule.lease, share));
      if (await takeFromShard(this.table, key, { index, endsAt }, shard, share, lease)) {
        // The window may have turned while the write was in flight: its lease belongs to the old one.
        if (this.local.get(key) === state) state.tokens += lease - 1;
        return { admitted: true, refund };
      }
      state.full.add(shard);
    }
    return { admitted: false, retryAfter };
  }

  /** Bounds the instance's memory: once it holds many buckets, those whose window has passed go. */
  private forgetPassedWindows(nowSeconds: number): void {
    if (this.local.size < 10_000) return;
    for (const [key, bucket] of this.local) if (bucket.endsAt <= nowSeconds) this.local.delete(key);
  }
}

/** Shard i's share of the quota: `limit / shards`, the remainder to the first shards. */
export function shareOf(rule: QuotaRule, shard: number): number {
  return Math.floor(rule.limit / rule.shards) + (shard < rule.limit % rule.shards ? 1 : 0);
}

function pickShard(shards: number, full: ReadonlySet<number>): number | undefined {
  const open: number[] = [];
  for (let shard = 0; shard < shards; shard++) if (!full.has(shard)) open.push(shard);
  return open.length === 0 ? undefined : open[Math.floor(Math.random() * open.length)];
}

/**
 * The buckets a principal's request counts in: its credential and its tenant (the organization of a
 * customer session or of an organization-subject OAuth token; else the user, who acts for their
 * organizations), or, for an authenticated OAuth client at the token endpoints, the client.
 */
export function bucketsOf(principal: Principal): [BucketName, string][] {
  switch (principal.kind) {
    case 'user':
      return [
        ['credential', `token:${principal.tokenId}`],
        principal.oauth?.subType === 'organization'
          ? ['tenant', `org:${principal.organizationIds[0]}`]
          : ['tenant', `user:${principal.userId}`],
      ];
    case 'customer':
      return [
        ['credential', `token:${principal.tokenId}`],
        ['tenant', `org:${principal.organizationId}`],
      ];
    case 'client_registration':
      return [
        ['credential', `registration:${principal.clientId}`],
        ['tenant', `user:${principal.client.created_by_user_id}`],
      ];
    case 'oauth_client':
      return [['oauthClient', `client:${principal.clientId}`]];
  }
}

/** Takes one request from each bucket (in parallel); throws 429 when any refuses. */
export async function enforce(keeper: QuotaKeeper, buckets: readonly [BucketName, string][]): Promise<void> {
  const verdicts = await Promise.all(buckets.map(([name, id]) => keeper.take(name, id)));
  const refused = verdicts.flatMap((verdict) => (verdict.admitted ? [] : [verdict.retryAfter]));
  if (refused.length > 0) {
    for (const verdict of verdicts) if (verdict.admitted) verdict.refund();
    throw new TooManyRequests(Math.max(...refused));
  }
}
