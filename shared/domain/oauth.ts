/**
 * The authorization server's fixed choices: lifetimes, the methods it supports, and the shapes of
 * the secrets it hands out. Plain data; every decision is explained in docs/oauth.md.
 */

/** An access token works for an hour; a client refreshes it. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
/** A code is exchanged at once by a client that just received it (RFC 6749 §4.1.2 allows ten minutes at most). */
export const AUTHORIZATION_CODE_TTL_SECONDS = 120;
/** A refresh token unused for 30 days lapses; every refresh replaces it with a new one (rotation). */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;
/**
 * A grant (a consent and every token refreshed from it) ends 90 days after the code was exchanged,
 * however often it is refreshed: a refresh token never reaches past it, and the user must authorize
 * again.
 */
export const GRANT_MAX_LIFETIME_SECONDS = 90 * 86_400;

/** RFC 7636: S256 only; `plain` would put the verifier itself in the front channel (RFC 9700 §2.1.1). */
export const CODE_CHALLENGE_METHODS = ['S256'] as const;

export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;
export type ClientAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

/** Who a token acts for: the consenting user, or one organization of theirs (RFC 7591 `default_sub_type`). */
export type SubType = 'user' | 'organization';
