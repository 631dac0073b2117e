/**
 * The environment variables the stack gives functions, by name. A module of their own: the
 * functions read them at init, and importing them from the route table would put the whole table
 * (every operation's grants) into every bundle.
 */

export const TABLE_NAME_ENV = 'TABLE_NAME';
/** Name (or ARN) of the Secrets Manager secret holding the webhook key set, given to `webhookKeySet` functions only. */
export const WEBHOOK_KEY_SET_ID_ENV = 'WEBHOOK_KEY_SET_ID';
/** The stack's `customerPortalUrl` setting, where customer-session links point. */
export const CUSTOMER_PORTAL_URL_ENV = 'CUSTOMER_PORTAL_URL';
/**
 * The issuer: the API's own base URL (`https://api.example.com`, no trailing slash), from the stage's
 * configuration (its custom domain, else the HTTP API's URL). Every absolute URL the API hands out is
 * built on it (OAuth discovery, `iss`, `registration_client_uri`, ID Tokens), never on a request header.
 */
export const ISSUER_ENV = 'ISSUER_URL';
/** ARN of the KMS key that signs ID Tokens (RS256), given to the token endpoint's function only. */
export const ID_TOKEN_SIGNING_KEY_ENV = 'ID_TOKEN_SIGNING_KEY_ARN';
/** ARNs of the KMS keys the JWKS publishes (the signing key first), comma-separated: the discovery function's. */
export const ID_TOKEN_PUBLISHED_KEYS_ENV = 'ID_TOKEN_PUBLISHED_KEY_ARNS';

/**
 * The request header that names the caller's address (`cloudfront-viewer-address` behind the prod
 * front door, infra/front-door.ts); unset: the connection's source address.
 */
export const CLIENT_ADDRESS_HEADER_ENV = 'CLIENT_ADDRESS_HEADER';
