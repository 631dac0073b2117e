/**
 * Every error the API answers with, modelled once.
 *
 * Each error carries the contract's status, JSON body and headers in the shape
 * `@middy/http-error-handler` understands (`statusCode`, `expose`, a JSON
 * `message`, `headers`), so that middleware alone maps them to HTTP. Anything
 * that is not an `ApiError` becomes the bare 500 of `internalErrorBody`.
 */

export interface ValidationIssue {
  loc: string[];
  msg: string;
  type: string;
  input?: unknown;
}

export class ApiError extends Error {
  readonly expose = true;
  readonly statusCode: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(statusCode: number, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    super(JSON.stringify(body));
    this.name = new.target.name;
    this.statusCode = statusCode;
    this.body = body;
    this.headers = headers;
  }
}

const REALM = 'Bearer realm="polar"';

/** No credential, another scheme, or a credential of the wrong kind for the operation. */
export class Unauthorized extends ApiError {
  constructor() {
    super(401, { error: 'Unauthorized', detail: 'Unauthorized' }, { 'WWW-Authenticate': REALM });
  }
}

/** A credential that resolves to nothing, is expired or revoked, or is garbage. */
export class InvalidToken extends ApiError {
  constructor(description = 'The access token provided is expired, revoked, malformed, or invalid.') {
    super(
      401,
      { error: 'invalid_token', error_description: description },
      { 'WWW-Authenticate': `${REALM}, error="invalid_token"` },
    );
  }
}

export class InsufficientScope extends ApiError {
  constructor(
    requiredScopes: readonly string[],
    description = `The access token does not have the required scope: ${requiredScopes.join(' or ')}.`,
  ) {
    const scope = requiredScopes.join(' ');
    super(
      403,
      { error: 'insufficient_scope', error_description: description },
      { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"` },
    );
  }
}

/** No route takes this path (the contract's unknown-route answer, distinct from an unknown resource). */
export class RouteNotFound extends ApiError {
  constructor() {
    super(404, { error: 'NotFound', detail: 'Not Found' });
  }
}

/** A route takes this path, with other methods only; `Allow` names them (RFC 9110 §15.5.6). */
export class MethodNotAllowed extends ApiError {
  constructor(allowed: readonly string[]) {
    super(405, { error: 'MethodNotAllowed', detail: 'Method Not Allowed' }, { Allow: allowed.join(', ') });
  }
}

/** A change to a subscription that has already ended (the hosted service's 403). */
export class AlreadyCanceledSubscription extends ApiError {
  constructor() {
    super(403, { error: 'AlreadyCanceledSubscription', detail: 'This subscription has already ended.' });
  }
}

/** An uncancel of a subscription that is not set to cancel at the end of its period (409). */
export class SubscriptionNotScheduledToCancel extends ApiError {
  constructor() {
    super(409, {
      error: 'SubscriptionNotScheduledToCancel',
      detail: 'This subscription is not scheduled to be canceled.',
    });
  }
}

/** Another change to the same subscription won the race (409); the client retries. */
export class SubscriptionLocked extends ApiError {
  constructor() {
    super(409, {
      error: 'SubscriptionLocked',
      detail: 'This subscription is being changed by another request; retry.',
    });
  }
}

/** Other changes to the same customer kept winning the race (409); the client retries. */
export class CustomerLocked extends ApiError {
  constructor() {
    super(409, {
      error: 'CustomerLocked',
      detail: 'This customer is being changed by another request; retry.',
    });
  }
}

/** A webhook endpoint kept changing under concurrent requests while one was decided (409); nothing changed. */
export class WebhookEndpointLocked extends ApiError {
  constructor() {
    super(409, {
      error: 'WebhookEndpointLocked',
      detail: 'This webhook endpoint is being changed by other requests; retry.',
    });
  }
}

export class ResourceNotFound extends ApiError {
  constructor() {
    super(404, { error: 'ResourceNotFound', detail: 'Not found' });
  }
}

/** The request does not match the schema (422). */
export class RequestValidationError extends ApiError {
  constructor(readonly issues: ValidationIssue[]) {
    super(422, { error: 'RequestValidationError', detail: issues });
  }
}

/** A well-formed request that refers to things that do not qualify (422). */
export class PolarRequestValidationError extends ApiError {
  constructor(readonly issues: ValidationIssue[]) {
    super(422, { error: 'PolarRequestValidationError', detail: issues });
  }
}

/** RFC 7591 §3.2.2 registration errors. */
export class InvalidClientMetadata extends ApiError {
  constructor(
    error: 'invalid_client_metadata' | 'invalid_redirect_uri' | 'invalid_request',
    description: string,
  ) {
    super(400, { error, error_description: description });
  }
}

/** The error codes of RFC 6749 §4.1.2.1 and §5.2 (and RFC 7009 §2.2.1) this server answers. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'access_denied';

/** An OAuth 2.0 error answer, `{"error", "error_description"}`, at its RFC status (400 unless said). */
export class OAuthError extends ApiError {
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    statusCode = 400,
    headers: Record<string, string> = {},
  ) {
    super(statusCode, { error: code, error_description: description }, headers);
  }
}

/**
 * Client authentication failed (RFC 6749 §5.2): 401 with a `Basic` challenge, the scheme a client
 * may authenticate with, whichever one it tried.
 */
export class InvalidClient extends OAuthError {
  constructor(description = 'Client authentication failed.') {
    super('invalid_client', description, 401, { 'WWW-Authenticate': 'Basic realm="polar"' });
  }
}

export class UnsupportedMediaType extends ApiError {
  constructor() {
    super(415, { error: 'UnsupportedMediaType', detail: 'Content-Type must be application/json' });
  }
}

export class PayloadTooLarge extends ApiError {
  constructor(limitBytes: number) {
    super(413, { error: 'PayloadTooLarge', detail: `Request body must not exceed ${limitBytes} bytes` });
  }
}

/** The database stayed throttled or unreachable after the SDK's retries. */
export class ServiceUnavailable extends ApiError {
  constructor(retryAfterSeconds = 1) {
    super(
      503,
      { error: 'ServiceUnavailable', detail: 'The service is temporarily unavailable; retry shortly.' },
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

/**
 * A cap reached (shared/domain/limits.ts): the owner has as many as allowed. `oauth`: in RFC 7591's
 * error shape (the registration endpoint's), else in the API's.
 */
export class LimitReached extends ApiError {
  constructor(what: string, limit: number, oauth = false) {
    const description = `At most ${limit} ${what}: delete one before creating another.`;
    super(
      403,
      oauth
        ? { error: 'limit_reached', error_description: description }
        : { error: 'LimitReached', detail: description },
    );
  }
}

/** A request quota spent (shared/http/quota.ts): retry after `retryAfterSeconds`. */
export class TooManyRequests extends ApiError {
  constructor(retryAfterSeconds: number, headers: Record<string, string> = {}) {
    super(
      429,
      {
        error: 'TooManyRequests',
        detail: `Rate limit exceeded: retry after ${retryAfterSeconds} seconds.`,
      },
      { 'Retry-After': String(retryAfterSeconds), ...headers },
    );
  }
}

export const internalErrorBody = { error: 'InternalServerError', detail: 'Internal Server Error' } as const;

/** An external customer id that names customers in several of the caller's organizations (409). */
export class AmbiguousExternalCustomerId extends ApiError {
  constructor() {
    super(409, {
      error: 'AmbiguousExternalCustomerID',
      detail:
        'The external customer ID matches customers in several accessible organizations; use customer_id.',
    });
  }
}

/** A request with the same Idempotency-Key is still being processed (409). */
export class IdempotencyKeyInUse extends ApiError {
  constructor() {
    super(
      409,
      {
        error: 'IdempotencyKeyInUse',
        detail: 'A request with this Idempotency-Key is still in progress; retry shortly.',
      },
      { 'Retry-After': '1' },
    );
  }
}

/**
 * Raised by repositories when a conditional write finds the item missing or
 * changed; `item` is the item as it was, when the write asked for it.
 */
export class ConditionFailed extends Error {
  constructor(
    readonly reasons: (string | undefined)[] = [],
    readonly item?: Record<string, unknown>,
    /** A transaction's: per item (as `reasons`), the old item of one that asked for it, as it was. */
    readonly items: (Record<string, unknown> | undefined)[] = [],
  ) {
    super('condition failed');
    this.name = 'ConditionFailed';
  }
}
