import { isIP } from 'node:net';
import { insertOAuthClient } from '../data/oauth-clients.ts';
import { InvalidClientMetadata } from '../domain/errors.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import { DEFAULT_CLIENT_SCOPE, parseScope } from '../domain/scopes.ts';
import { generateSecret, hashSecret, secretPrefixes } from '../domain/secrets.ts';
import type { CreateClientBody, OAuth2ClientRegistration } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';

const LOOPBACK_NAMES = new Set(['localhost']);
/** Schemes that would run or read something in the user agent instead of redirecting to the client. */
const UNSAFE_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:']);

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (LOOPBACK_NAMES.has(host.toLowerCase())) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

/** RFC 7591 §2 / RFC 8252: no fragments; plain http only for loopback redirects. */
function checkRedirectUri(uri: string): void {
  if (uri.includes('#')) {
    throw new InvalidClientMetadata(
      'invalid_redirect_uri',
      `Redirect URI must not contain a fragment: ${uri}`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(uri);
  } catch {
    // RFC 3986 syntax (the schema's check) admits hosts and ports no browser can reach.
    throw new InvalidClientMetadata('invalid_redirect_uri', `Redirect URI is not a usable URL: ${uri}`);
  }
  if (UNSAFE_SCHEMES.has(parsed.protocol)) {
    throw new InvalidClientMetadata(
      'invalid_redirect_uri',
      `Redirect URI scheme is not allowed: ${parsed.protocol}`,
    );
  }
  if (parsed.protocol === 'http:' && !isLoopback(parsed.hostname)) {
    throw new InvalidClientMetadata(
      'invalid_redirect_uri',
      `Redirect URI must use https unless it points to localhost or a loopback address: ${uri}`,
    );
  }
}

function normalizeScope(scope: string | undefined): string {
  if (scope === undefined) return DEFAULT_CLIENT_SCOPE;
  const { scopes, unknown } = parseScope(scope);
  if (unknown.length > 0) {
    throw new InvalidClientMetadata('invalid_client_metadata', `Unknown scope: ${unknown.join(' ')}`);
  }
  if (scopes.length === 0)
    throw new InvalidClientMetadata('invalid_client_metadata', 'Scope must not be empty');
  return scopes.join(' ');
}

const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];

const present = <T>(value: T | null | undefined): value is T => value !== null && value !== undefined;

/**
 * Registers an OAuth client (RFC 7591). The answer repeats the registered
 * metadata with defaults applied and nulls omitted; the secret is shown once
 * and only its hash is stored.
 */
export async function createClient(
  deps: Dependencies,
  principal: UserPrincipal,
  body: CreateClientBody,
): Promise<OAuth2ClientRegistration> {
  for (const uri of body.redirect_uris) checkRedirectUri(uri);
  const authMethod = body.token_endpoint_auth_method ?? 'client_secret_post';
  const registration = {
    redirect_uris: body.redirect_uris,
    token_endpoint_auth_method: authMethod,
    // Repeated values collapse, so what is stored stays as small as the enums.
    grant_types: unique(body.grant_types ?? ['authorization_code', 'refresh_token']),
    response_types: unique(body.response_types ?? ['code']),
    scope: normalizeScope(body.scope),
    client_name: body.client_name,
    ...(present(body.client_uri) ? { client_uri: body.client_uri } : {}),
    ...(present(body.logo_uri) ? { logo_uri: body.logo_uri } : {}),
    ...(present(body.tos_uri) ? { tos_uri: body.tos_uri } : {}),
    ...(present(body.policy_uri) ? { policy_uri: body.policy_uri } : {}),
    default_sub_type: body.default_sub_type ?? 'organization',
  };
  const isPublic = authMethod === 'none';
  const clientId = generateSecret(secretPrefixes.clientId);
  const clientSecret = isPublic ? undefined : generateSecret(secretPrefixes.clientSecret);
  const now = deps.now();
  const issuedAt = Math.floor(now.getTime() / 1000);

  await insertOAuthClient(deps.table, {
    client_id: clientId,
    client_secret_hash: clientSecret ? hashSecret(clientSecret) : null,
    client_id_issued_at: issuedAt,
    client_secret_expires_at: 0,
    registration,
    created_by_user_id: principal.userId,
    created_at: now.toISOString(),
  });

  return {
    ...registration,
    client_id: clientId,
    client_id_issued_at: issuedAt,
    ...(clientSecret ? { client_secret: clientSecret, client_secret_expires_at: 0 } : {}),
  } as OAuth2ClientRegistration;
}
