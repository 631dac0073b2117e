/**
 * The authorization request of the code flow (RFC 6749 §4.1.1 with PKCE, RFC 7636 §4.3), checked
 * the same way for Authorize (the query string) and for the user's consent (the same parameters in
 * a JSON body).
 *
 * RFC 6749 §4.1.2.1 splits the faults in two. Until the client and its redirect URI are known to
 * be good, nothing may be sent to the redirect URI: those faults are answered to the caller (400).
 * Every later fault goes back to the client, at its redirect URI, with `state` and `iss`.
 */
import { InsufficientScope, OAuthError, type OAuthErrorCode } from '../domain/errors.ts';
import type { RegisteredClient, UserPrincipal } from '../domain/principals.ts';
import { parseScope } from '../domain/scopes.ts';
import { hasSecretShape, secretPrefixes } from '../domain/secrets.ts';

export const AUTHORIZATION_PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
] as const;
export type AuthorizationParameters = Partial<Record<(typeof AUTHORIZATION_PARAMETERS)[number], string>>;

/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) of a 32-byte digest is 43 characters, no padding. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const MAX_STATE = 1024;
/** OpenID Connect's `nonce`, copied into the ID Token: bounded like `state`. */
const MAX_NONCE = 1024;
const MAX_SCOPE = 4096;
/** Lengths count code points, as everywhere in the contract. */
const lengthOf = (value: string): number => [...value].length;

/** A request the client and redirect URI of which are good: what a consent grants. */
export interface AuthorizationRequest {
  client: RegisteredClient;
  redirectUri: string;
  /** RFC 6749 §4.1.3: the token request must then repeat it. */
  redirectUriGiven: boolean;
  scopes: string[];
  state: string | undefined;
  /** OpenID Connect Core §3.1.2.1: bound to the code, copied into the ID Token. */
  nonce: string | undefined;
  codeChallenge: string;
}

/** The client's answer at its redirect URI (RFC 6749 §4.1.2, §4.1.2.1), with RFC 9207's `iss`. */
export function redirectTo(
  redirectUri: string,
  parameters: Record<string, string | undefined>,
  issuer: string,
): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...parameters, iss: issuer })) {
    if (value !== undefined) query.append(name, value);
  }
  // Appended to the registered URI as it is, which keeps its own query (RFC 6749 §3.1.2).
  return `${redirectUri}${redirectUri.includes('?') ? '&' : '?'}${query}`;
}

/** A fault answered at the client's redirect URI. */
export class AuthorizationRedirect extends Error {
  constructor(readonly location: string) {
    super('authorization answered at the redirect URI');
  }
}

/** The query string of an authorization request: a repeated parameter is a fault (RFC 6749 §3.1). */
export function parseAuthorizationQuery(raw: string): {
  parameters: AuthorizationParameters;
  repeated: string[];
} {
  const search = new URLSearchParams(raw);
  const parameters: AuthorizationParameters = {};
  const repeated: string[] = [];
  for (const name of AUTHORIZATION_PARAMETERS) {
    const values = search.getAll(name);
    // RFC 6749 §3.1: a parameter sent without a value is treated as omitted.
    if (values.length > 1) repeated.push(name);
    if (values[0]) parameters[name] = values[0];
  }
  return { parameters, repeated };
}

/**
 * Which registered redirect URI the request names: exactly one of the client's (simple string
 * comparison, RFC 9700 §4.1.3), or, when it names none, the client's only one.
 */
function redirectUriOf(client: RegisteredClient, given: string | undefined): string {
  const registered = (client.registration.redirect_uris as string[] | undefined) ?? [];
  if (given === undefined) {
    if (registered.length === 1) return registered[0] as string;
    throw new OAuthError('invalid_request', 'redirect_uri is required: the client registered more than one.');
  }
  if (!registered.includes(given)) {
    throw new OAuthError('invalid_request', 'redirect_uri is not one the client registered.');
  }
  return given;
}

/**
 * Checks an authorization request against the client it names (`undefined`: unknown or deleted).
 * Throws `OAuthError` (400, to the caller) while the client or redirect URI is in doubt, and
 * `AuthorizationRedirect` (to the client) for every later fault.
 */
export function checkAuthorizationRequest(
  parameters: AuthorizationParameters,
  repeated: readonly string[],
  client: RegisteredClient | undefined,
  issuer: string,
): AuthorizationRequest {
  if (repeated.includes('client_id') || repeated.includes('redirect_uri')) {
    throw new OAuthError('invalid_request', `${repeated.join(', ')} must not be repeated.`);
  }
  if (parameters.client_id === undefined) throw new OAuthError('invalid_request', 'client_id is required.');
  if (!client || client.deleted_at !== null) {
    throw new OAuthError('invalid_client', 'client_id names no registered client.');
  }
  const redirectUri = redirectUriOf(client, parameters.redirect_uri);
  const { state } = parameters;
  const fail = (error: OAuthErrorCode, description: string): never => {
    throw new AuthorizationRedirect(
      redirectTo(
        redirectUri,
        {
          error,
          error_description: description,
          // An over-long state is not echoed: it is the fault.
          state: state !== undefined && lengthOf(state) <= MAX_STATE ? state : undefined,
        },
        issuer,
      ),
    );
  };

  if (repeated.length > 0) fail('invalid_request', `${repeated.join(', ')} must not be repeated.`);
  if (state !== undefined && lengthOf(state) > MAX_STATE) {
    fail('invalid_request', `state must be at most ${MAX_STATE} characters.`);
  }
  if (parameters.nonce !== undefined && lengthOf(parameters.nonce) > MAX_NONCE) {
    fail('invalid_request', `nonce must be at most ${MAX_NONCE} characters.`);
  }
  if (parameters.response_type === undefined) fail('invalid_request', 'response_type is required.');
  if (parameters.response_type !== 'code') {
    fail('unsupported_response_type', 'The only response type is code.');
  }
  if (!(client.registration.response_types as string[] | undefined)?.includes('code')) {
    fail('unauthorized_client', 'The client did not register the code response type.');
  }
  if (parameters.code_challenge === undefined) {
    fail('invalid_request', 'code_challenge is required: every client uses PKCE (RFC 7636) with S256.');
  }
  if (parameters.code_challenge_method !== 'S256') {
    fail(
      'invalid_request',
      parameters.code_challenge_method === undefined
        ? 'code_challenge_method is required and must be S256 (plain is not supported).'
        : 'code_challenge_method must be S256 (plain is not supported).',
    );
  }
  const codeChallenge = parameters.code_challenge as string;
  if (!S256_CHALLENGE.test(codeChallenge)) {
    fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier (43 characters).');
  }

  const registeredScopes = parseScope(String(client.registration.scope ?? '')).scopes;
  let scopes = registeredScopes;
  if (parameters.scope !== undefined) {
    if (lengthOf(parameters.scope) > MAX_SCOPE) fail('invalid_scope', 'scope is too long.');
    const asked = parseScope(parameters.scope);
    const outside = asked.scopes.filter((scope) => !registeredScopes.includes(scope));
    if (asked.scopes.length === 0) fail('invalid_scope', 'scope names no scope.');
    if (outside.length > 0) {
      fail('invalid_scope', `Not among the client's registered scopes: ${outside.join(' ')}.`);
    }
    scopes = asked.scopes;
  }
  return {
    client,
    redirectUri,
    redirectUriGiven: parameters.redirect_uri !== undefined,
    scopes,
    state,
    nonce: parameters.nonce,
    codeChallenge,
  };
}

/** A client id worth a read: the shape Create Client issues. */
export const isClientId = (value: string | undefined): value is string =>
  value !== undefined && hasSecretShape(value, secretPrefixes.clientId);

/**
 * A user delegates only what their own credential holds: a client cannot get through consent a
 * scope the consenting token lacks (403 to the user, nothing sent to the client).
 */
export function checkDelegable(principal: UserPrincipal, scopes: readonly string[]): void {
  const missing = scopes.filter((scope) => !principal.scopes.has(scope));
  if (missing.length > 0) {
    throw new InsufficientScope(
      missing,
      `Your token cannot grant scopes it does not hold: ${missing.join(' ')}.`,
    );
  }
}
