/**
 * The product's abuse limits: caps on how many of a thing an owner may have, and request quotas.
 * One home for the numbers; docs/limits.md and the OpenAPI document state the same values
 * (test/unit/limits.test.ts compares them).
 */

/** How many of a kind an owner may have at once; a create past it is refused (403 `LimitReached`). */
export const CAPS = {
  /** Live (not deleted) webhook endpoints per organization. */
  webhookEndpoints: { kind: 'WEBHOOK', limit: 20, owner: 'organization' },
  /** Live (not deleted) OAuth clients registered per user. */
  oauthClients: { kind: 'OAUTHCLIENT', limit: 20, owner: 'user' },
} as const;

export type CapName = keyof typeof CAPS;

/**
 * A request quota: at most `limit` requests per fixed window of `windowSeconds`, counted in
 * `shards` counter items (each takes at most `limit / shards`), a function instance taking
 * `lease` of them at a time (shared/http/quota.ts).
 */
export interface QuotaRule {
  limit: number;
  windowSeconds: number;
  shards: number;
  lease: number;
}

/**
 * The buckets a request is counted in. Every authenticated request counts against its credential
 * and its tenant (the organization of a customer session or of an organization-subject OAuth token;
 * the user of a personal access token or a user-subject OAuth token, who acts for their
 * organizations). The OAuth client endpoints (token, revoke, introspect) count per client and per
 * source address, before the client is authenticated.
 */
export interface QuotaSettings {
  credential: QuotaRule;
  tenant: QuotaRule;
  oauthClient: QuotaRule;
  address: QuotaRule;
}

/**
 * Deployed and `npm start`. Per 10 s: 300 per credential (30 rps), 600 per tenant (60 rps), 100 per
 * OAuth client (10 rps) and 100 per source address at the OAuth client endpoints. The hosted
 * service documents 500/min per token by default (100/s for its elevated group): these allow
 * its default on every credential with room for bursts, and stay well under the stage throttle
 * (infra/front-door.ts), so that at least 16 tenants at their full quota fit beside each other.
 */
export const DEFAULT_QUOTAS: QuotaSettings = Object.freeze({
  credential: { limit: 300, windowSeconds: 10, shards: 4, lease: 5 },
  tenant: { limit: 600, windowSeconds: 10, shards: 4, lease: 5 },
  oauthClient: { limit: 100, windowSeconds: 10, shards: 2, lease: 1 },
  address: { limit: 100, windowSeconds: 10, shards: 2, lease: 1 },
});

/** The stage-wide API Gateway throttle (a backstop behind the quotas and WAF). */
export const STAGE_THROTTLE = { rateLimit: 1000, burstLimit: 2000 } as const;

/** The WAF rate-based rules in front of prod: requests per source IP per 5-minute window. */
export const WAF_RATE_LIMITS = {
  /** Every path. */
  perIp: 6000,
  /** The OAuth paths (`/v1/oauth2/*`, the well-known documents). */
  oauthPerIp: 600,
} as const;
