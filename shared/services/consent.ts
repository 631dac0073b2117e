/**
 * Consent (`POST /v1/oauth2/consent`): the user, authenticated by a personal access token, allows
 * or denies a client's authorization request, sent as the same parameters Authorize takes. Allowed,
 * a single-use code is issued, bound to the client, the redirect URI, the scopes, the subject and
 * the PKCE challenge, valid `AUTHORIZATION_CODE_TTL_SECONDS`; either way the answer is where the
 * user's agent goes next: the client's redirect URI with the code or the error.
 */

import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { findOAuthClient, access as oauthClientsAccess } from '../data/oauth-clients.ts';
import { insertAuthorizationCode, access as oauthGrantsAccess } from '../data/oauth-grants.ts';
import type { OAuthSubject } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError } from '../domain/errors.ts';
import { AUTHORIZATION_CODE_TTL_SECONDS } from '../domain/oauth.ts';
import type { RegisteredClient, UserPrincipal } from '../domain/principals.ts';
import { generateSecret, hashSecret, secretPrefixes } from '../domain/secrets.ts';
import type { ConsentBody } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import {
  AUTHORIZATION_PARAMETERS,
  type AuthorizationParameters,
  AuthorizationRedirect,
  checkAuthorizationRequest,
  checkDelegable,
  isClientId,
  redirectTo,
} from './authorization-request.ts';

const invalidOrganization = (msg: string, input: unknown, type = 'value_error') =>
  new PolarRequestValidationError([{ loc: ['body', 'organization_id'], msg, type, input }]);

/**
 * For whom the tokens will act (the client's `default_sub_type`): the user, in every organization
 * their token reaches; or one of those organizations, named by `organization_id` unless the user has
 * only one. An organization outside the token's is answered as one that does not exist.
 */
function subjectOf(
  client: RegisteredClient,
  principal: UserPrincipal,
  organizationId: string | undefined,
): OAuthSubject {
  const { userId, organizationIds } = principal;
  if (client.registration.default_sub_type === 'user') {
    if (organizationId !== undefined) {
      throw invalidOrganization(
        'This client acts for the user: it takes no organization_id.',
        organizationId,
      );
    }
    return { sub_type: 'user', user_id: userId, organization_ids: [...organizationIds] };
  }
  if (organizationId === undefined) {
    if (organizationIds.length === 1) {
      return { sub_type: 'organization', user_id: userId, organization_ids: [...organizationIds] };
    }
    throw invalidOrganization(
      organizationIds.length === 0
        ? 'You belong to no organization this client could act for.'
        : 'This client acts for one organization: choose it with organization_id.',
      null,
      'missing',
    );
  }
  const chosen = organizationId.toLowerCase();
  if (!organizationIds.includes(chosen))
    throw invalidOrganization('Organization does not exist.', organizationId);
  return { sub_type: 'organization', user_id: userId, organization_ids: [chosen] };
}

export async function consent(
  deps: Dependencies,
  principal: UserPrincipal,
  body: ConsentBody,
  { issuer }: { issuer: string },
): Promise<{ location: string }> {
  const parameters: AuthorizationParameters = {};
  for (const name of AUTHORIZATION_PARAMETERS) {
    const value = body[name];
    if (value) parameters[name] = value;
  }
  const client = isClientId(parameters.client_id)
    ? await findOAuthClient(deps.table, parameters.client_id)
    : undefined;
  let request: ReturnType<typeof checkAuthorizationRequest>;
  try {
    request = checkAuthorizationRequest(parameters, [], client, issuer);
  } catch (error) {
    if (error instanceof AuthorizationRedirect) return { location: error.location };
    throw error;
  }
  const { redirectUri, state } = request;
  if (body.action === 'deny') {
    return {
      location: redirectTo(
        redirectUri,
        { error: 'access_denied', error_description: 'The user denied the request.', state },
        issuer,
      ),
    };
  }
  checkDelegable(principal, request.scopes);
  const subject = subjectOf(request.client, principal, body.organization_id);

  const code = generateSecret(secretPrefixes.authorizationCode);
  const now = deps.now();
  await insertAuthorizationCode(deps.table, hashSecret(code), {
    client_id: request.client.client_id,
    redirect_uri: redirectUri,
    redirect_uri_given: request.redirectUriGiven,
    scope: request.scopes.join(' '),
    code_challenge: request.codeChallenge,
    ...subject,
    // OpenID Connect: the ID Token repeats the nonce and says when the user authenticated (this consent).
    ...(request.nonce !== undefined ? { nonce: request.nonce } : {}),
    auth_time: Math.floor(now.getTime() / 1000),
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + AUTHORIZATION_CODE_TTL_SECONDS * 1000).toISOString(),
  });
  return { location: redirectTo(redirectUri, { code, state }, issuer) };
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  consent: {
    table: [
      ...tokensAccess.findToken,
      ...idempotencyAccess.idempotencyKey,
      ...oauthClientsAccess.findOAuthClient,
      ...oauthGrantsAccess.insertAuthorizationCode,
    ],
  },
});
