import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { insertOAuthClient, access as oauthClientsAccess } from '../data/oauth-clients.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { redirectUriProblem, webUrlProblem } from '../domain/client-uris.ts';
import { InvalidClientMetadata } from '../domain/errors.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import { DEFAULT_CLIENT_SCOPE, parseScope } from '../domain/scopes.ts';
import { generateSecret, hashSecret, secretPrefixes } from '../domain/secrets.ts';
import type { CreateClientBody, OAuth2ClientRegistration } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';

const WEB_URI_FIELDS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const;

/** RFC 7591 §3.2.2, in the documented order: redirect URIs, the other URIs, grant types (scope last). */
function checkMetadata(body: CreateClientBody, grantTypes: readonly string[]): void {
  for (const uri of body.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new InvalidClientMetadata('invalid_redirect_uri', `Redirect URI ${problem}: ${uri}`);
  }
  for (const field of WEB_URI_FIELDS) {
    const uri = body[field];
    const problem = typeof uri === 'string' ? webUrlProblem(uri) : undefined;
    if (problem) throw new InvalidClientMetadata('invalid_client_metadata', `${field} ${problem}: ${uri}`);
  }
  // The only response type is `code`, which RFC 7591 §2.1 ties to the authorization_code grant.
  if (!grantTypes.includes('authorization_code')) {
    throw new InvalidClientMetadata(
      'invalid_client_metadata',
      'grant_types must include authorization_code: the code response type needs it (RFC 7591 §2.1)',
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

/** The metadata a registration stores: the body checked (RFC 7591 §3.2.2), defaults applied, nulls left out. */
export function registrationOf(body: CreateClientBody) {
  // Repeated values collapse, so what is stored stays as small as the enums.
  const grantTypes = unique(body.grant_types ?? ['authorization_code', 'refresh_token']);
  checkMetadata(body, grantTypes);
  return {
    redirect_uris: body.redirect_uris,
    token_endpoint_auth_method: body.token_endpoint_auth_method ?? 'client_secret_post',
    grant_types: grantTypes,
    response_types: unique(body.response_types ?? ['code']),
    scope: normalizeScope(body.scope),
    client_name: body.client_name,
    ...(present(body.client_uri) ? { client_uri: body.client_uri } : {}),
    ...(present(body.logo_uri) ? { logo_uri: body.logo_uri } : {}),
    ...(present(body.tos_uri) ? { tos_uri: body.tos_uri } : {}),
    ...(present(body.policy_uri) ? { policy_uri: body.policy_uri } : {}),
    default_sub_type: body.default_sub_type ?? 'organization',
  };
}

/** RFC 7592's `registration_client_uri`: where the registration is read, replaced and deleted. */
export const registrationClientUri = (baseUrl: string, clientId: string): string =>
  `${baseUrl}/v1/oauth2/register/${encodeURIComponent(clientId)}`;

/**
 * Registers an OAuth client (RFC 7591). The answer repeats the registered metadata with defaults
 * applied and nulls omitted; the client secret and the registration access token (RFC 7592) are
 * shown once, and only their hashes are stored.
 */
export async function createClient(
  deps: Dependencies,
  principal: UserPrincipal,
  body: CreateClientBody,
  { baseUrl }: { baseUrl: string },
): Promise<OAuth2ClientRegistration> {
  const registration = registrationOf(body);
  const isPublic = registration.token_endpoint_auth_method === 'none';
  const clientId = generateSecret(secretPrefixes.clientId);
  const clientSecret = isPublic ? undefined : generateSecret(secretPrefixes.clientSecret);
  const registrationToken = generateSecret(secretPrefixes.registrationAccessToken);
  const now = deps.now();
  const issuedAt = Math.floor(now.getTime() / 1000);

  await insertOAuthClient(deps.table, {
    client_id: clientId,
    client_secret_hash: clientSecret ? hashSecret(clientSecret) : null,
    registration_token_hash: hashSecret(registrationToken),
    client_id_issued_at: issuedAt,
    client_secret_expires_at: 0,
    registration,
    created_by_user_id: principal.userId,
    created_at: now.toISOString(),
    modified_at: null,
    deleted_at: null,
  });
  countBusinessEvent('OAuthClientsRegistered');

  return {
    ...registration,
    client_id: clientId,
    client_id_issued_at: issuedAt,
    ...(clientSecret ? { client_secret: clientSecret, client_secret_expires_at: 0 } : {}),
    registration_access_token: registrationToken,
    registration_client_uri: registrationClientUri(baseUrl, clientId),
  } as OAuth2ClientRegistration;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createClient: {
    table: [
      // A personal access token only (the handler refuses OAuth access tokens): no access-token read.
      ...tokensAccess.findToken,
      ...idempotencyAccess.idempotencyKey,
      ...oauthClientsAccess.insertOAuthClient,
    ],
  },
});
