/**
 * Authorization server metadata (RFC 8414 §2) and OpenID Provider metadata (OpenID Connect Discovery
 * 1.0 §3), one document served at both well-known addresses (RFC 8414 §3 and Discovery §4). The
 * issuer is the stage's configured base URL (`shared/domain/issuer.ts`), which is where clients
 * fetch the document from, as RFC 8414 §3.3 and Discovery §4.3 require. Endpoints come from the
 * route table, so the document names exactly the operations this deployment serves.
 */

import { ID_TOKEN_ALGORITHM } from '../domain/id-token.ts';
import { CODE_CHALLENGE_METHODS, GRANT_TYPES, TOKEN_ENDPOINT_AUTH_METHODS } from '../domain/oauth.ts';
import { ALL_SCOPES } from '../domain/scopes.ts';
import { operationRoutes } from '../generated/operations.ts';

/** Metadata field → the operation that serves it. */
const ENDPOINTS: Record<string, string> = {
  authorization_endpoint: 'authorize',
  token_endpoint: 'requestToken',
  registration_endpoint: 'createClient',
  revocation_endpoint: 'revokeToken',
  introspection_endpoint: 'introspectToken',
  userinfo_endpoint: 'userinfo',
};

/** The JWKS (RFC 7517) the ID Tokens are verified with, beside the metadata documents. */
export const JWKS_PATH = '/.well-known/jwks.json';

/** The claims an ID Token or UserInfo answer may carry (Discovery §3 `claims_supported`). */
export const CLAIMS_SUPPORTED = [
  'iss',
  'sub',
  'aud',
  'azp',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'at_hash',
  'name',
  'email',
  'email_verified',
];

const pathOf = (operationId: string): string | undefined =>
  operationRoutes.find((operation) => operation.operationId === operationId)?.path;

export function authorizationServerMetadata(issuer: string): Record<string, unknown> {
  const endpoints: Record<string, string> = {};
  for (const [field, operationId] of Object.entries(ENDPOINTS)) {
    const path = pathOf(operationId);
    if (path) endpoints[field] = `${issuer}${path}`;
  }
  return {
    issuer,
    ...endpoints,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    scopes_supported: ALL_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: GRANT_TYPES,
    token_endpoint_auth_methods_supported: TOKEN_ENDPOINT_AUTH_METHODS,
    code_challenge_methods_supported: CODE_CHALLENGE_METHODS,
    // RFC 9207: every answer at a redirect URI names the issuer, so a client can tell mix-ups.
    authorization_response_iss_parameter_supported: true,
    revocation_endpoint_auth_methods_supported: TOKEN_ENDPOINT_AUTH_METHODS,
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    // OpenID Connect: one subject identifier for every client; ID Tokens signed RS256 (Core §15.1),
    // never unsigned or encrypted; UserInfo answered as plain JSON.
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [ID_TOKEN_ALGORITHM],
    claims_supported: CLAIMS_SUPPORTED,
    claim_types_supported: ['normal'],
    // No request objects, no claims parameter: Discovery's default for request_uri_parameter_supported
    // is true, so each is said outright.
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    require_request_uri_registration: false,
    // Prompt, max_age, display and the like are not taken: the user consents through the API.
  };
}
