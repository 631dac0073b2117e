/** Every scope the API knows, in the specification's order (also the default `scope` of a new OAuth client). */
export const ALL_SCOPES = [
  'openid',
  'profile',
  'email',
  'user:read',
  'user:write',
  'organizations:read',
  'organizations:write',
  'custom_fields:read',
  'custom_fields:write',
  'discounts:read',
  'discounts:write',
  'checkout_links:read',
  'checkout_links:write',
  'checkouts:read',
  'checkouts:write',
  'transactions:read',
  'transactions:write',
  'payouts:read',
  'payouts:write',
  'products:read',
  'products:write',
  'benefits:read',
  'benefits:write',
  'events:read',
  'events:write',
  'meters:read',
  'meters:write',
  'files:read',
  'files:write',
  'subscriptions:read',
  'subscriptions:write',
  'customers:read',
  'customers:write',
  'members:read',
  'members:write',
  'wallets:read',
  'wallets:write',
  'disputes:read',
  'customer_meters:read',
  'customer_sessions:write',
  'member_sessions:write',
  'customer_seats:read',
  'customer_seats:write',
  'orders:read',
  'orders:write',
  'client_invoices:read',
  'client_invoices:write',
  'refunds:read',
  'refunds:write',
  'payments:read',
  'email_subscribers:read',
  'email_subscribers:write',
  'email_broadcasts:read',
  'email_broadcasts:write',
  'metrics:read',
  'webhooks:read',
  'webhooks:write',
  'license_keys:read',
  'license_keys:write',
  'customer_portal:read',
  'customer_portal:write',
  'notifications:read',
  'notifications:write',
  'notification_recipients:read',
  'notification_recipients:write',
  'organization_access_tokens:read',
  'organization_access_tokens:write',
] as const;

export type Scope = (typeof ALL_SCOPES)[number];

const KNOWN: ReadonlySet<string> = new Set(ALL_SCOPES);

export const DEFAULT_CLIENT_SCOPE = ALL_SCOPES.join(' ');

export const CUSTOMER_SESSION_SCOPE = 'customer_portal:read customer_portal:write';

/** Splits a space-separated scope string; any run of whitespace separates, duplicates collapse. */
export function parseScope(scope: string): { scopes: string[]; unknown: string[] } {
  const scopes = [...new Set(scope.split(/\s+/).filter((s) => s.length > 0))];
  return { scopes, unknown: scopes.filter((s) => !KNOWN.has(s)) };
}

export const isKnownScope = (scope: string): boolean => KNOWN.has(scope);

const GRANTED_CACHE_LIMIT = 256;
const grantedCache = new Map<string, ReadonlySet<string>>();

/**
 * The set of scopes a stored scope string grants, as `parseScope` splits it. Authentication needs
 * it on every request and a warm container sees the same few scope strings again and again, so
 * each is parsed once (a personal access token with every scope took a third of a warm Delete
 * Webhook Endpoint invocation to split; see test/bench). The sets are shared: never mutate them.
 */
export function grantedScopes(scope: string): ReadonlySet<string> {
  let granted = grantedCache.get(scope);
  if (!granted) {
    if (grantedCache.size >= GRANTED_CACHE_LIMIT) grantedCache.clear();
    granted = new Set(parseScope(scope).scopes);
    grantedCache.set(scope, granted);
  }
  return granted;
}

/** True when the granted scopes include at least one of the accepted ones (or none is required). */
export function grants(granted: ReadonlySet<string>, accepted: readonly string[]): boolean {
  return accepted.length === 0 || accepted.some((scope) => granted.has(scope));
}
