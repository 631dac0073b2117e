/**
 * Authorization server metadata (RFC 8414 §2), served at both well-known addresses (RFC 8414 §3 and
 * OpenID Connect Discovery 1.0 §4). The issuer is the API's own base URL, the very URL a client
 * fetched the document from, as RFC 8414 §3.3 requires and strict clients check. Endpoints come from
 * the route table, so the document names exactly the operations this deployment serves.
 */

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
    subject_types_supported: ['public'],
    claims_supported: ['sub', 'name', 'email', 'email_verified'],
  };
}
