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
