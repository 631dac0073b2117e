/**
 * Authorize (`GET /v1/oauth2/authorize`): the user's agent presents the client's authorization
 * request with the user's personal access token (this service has no browser login) and learns
 * what a consent would grant, or is sent back to the client with an error. Nothing is written;
 * the consent itself is `POST /v1/oauth2/consent` (shared/services/consent.ts).
 */

import type { OperationAccess } from '../data/grants.ts';
import { access as oauthGrantsAccess, readConsentContext } from '../data/oauth-grants.ts';
import type { OrganizationRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { AuthorizeResponseOrganization, AuthorizeResponseUser } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import {
  AuthorizationRedirect,
  checkAuthorizationRequest,
  checkDelegable,
  isClientId,
  parseAuthorizationQuery,
} from './authorization-request.ts';

export type AuthorizeResult =
  | { consent: AuthorizeResponseUser | AuthorizeResponseOrganization }
  | { redirect: string };

const organizationOf = (organization: OrganizationRecord) => ({
  id: organization.id,
  slug: organization.slug,
  avatar_url: null,
});

export async function authorize(
  deps: Dependencies,
  principal: UserPrincipal,
  rawQuery: string,
  { issuer }: { issuer: string },
): Promise<AuthorizeResult> {
  const { parameters, repeated } = parseAuthorizationQuery(rawQuery);
  const context = await readConsentContext(
    deps.table,
    isClientId(parameters.client_id) ? parameters.client_id : undefined,
    principal.userId,
    principal.organizationIds,
  );
  let request: ReturnType<typeof checkAuthorizationRequest>;
  try {
    request = checkAuthorizationRequest(parameters, repeated, context.client, issuer);
  } catch (error) {
    if (error instanceof AuthorizationRedirect) return { redirect: error.location };
    throw error;
  }
  checkDelegable(principal, request.scopes);

  const { client } = request;
  const registration = client.registration as Record<string, string | undefined>;
  const organizations = context.organizations.map(organizationOf);
  const common = {
    client: {
      created_at: client.created_at,
      modified_at: client.modified_at,
      client_id: client.client_id,
      client_name: registration.client_name ?? null,
      client_uri: registration.client_uri ?? null,
      logo_uri: registration.logo_uri ?? null,
      tos_uri: registration.tos_uri ?? null,
      policy_uri: registration.policy_uri ?? null,
    },
    scopes: request.scopes,
    organizations,
  };
  if (registration.default_sub_type === 'user') {
    const { user } = context;
    return {
      consent: {
        ...common,
        sub_type: 'user',
        sub: user ? { id: user.id, email: user.email, avatar_url: null } : null,
        requires_single_organization: false,
      },
    };
  }
  return {
    consent: {
      ...common,
      sub_type: 'organization',
      // The consent names the organization unless the user has exactly one.
      sub: organizations.length === 1 ? (organizations[0] ?? null) : null,
      requires_single_organization: true,
    },
  } as AuthorizeResult;
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  authorize: {
    table: [...tokensAccess.findToken, ...oauthGrantsAccess.readConsentContext],
  },
});
