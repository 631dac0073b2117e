/**
 * The applications a user authorized (their live OAuth grants, by client) and the revocation of
 * one: every live grant the user gave that client ends with its access and refresh tokens, so the
 * client's next request or refresh fails. The user's own act: a personal access token only.
 */
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import {
  findClients,
  listUserGrants,
  access as oauthGrantsAccess,
  revokeGrant,
} from '../data/oauth-grants.ts';
import type { OAuthGrantRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { ResourceNotFound } from '../domain/errors.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { AuthorizedClient, AuthorizedClientList } from '../generated/api-types.ts';
import { countBusinessEvent } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';

/** Live: not revoked, within its absolute end, and holding a token that has not expired. */
function isLive(grant: OAuthGrantRecord, now: number): boolean {
  if (grant.revoked_at !== null) return false;
  if (grant.expires_at !== undefined && Date.parse(grant.expires_at) <= now) return false;
  const refreshable = grant.refresh_expires_at !== null && Date.parse(grant.refresh_expires_at) > now;
  return refreshable || Date.parse(grant.access_expires_at) > now;
}

async function liveGrants(deps: Dependencies, userId: string): Promise<OAuthGrantRecord[]> {
  const now = deps.now().getTime();
  return (await listUserGrants(deps.table, userId)).filter((grant) => isLive(grant, now));
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export async function listAuthorizedClients(
  deps: Dependencies,
  principal: UserPrincipal,
): Promise<AuthorizedClientList> {
  const grants = await liveGrants(deps, principal.userId);
  const byClient = new Map<string, OAuthGrantRecord[]>();
  for (const grant of grants)
    byClient.set(grant.client_id, [...(byClient.get(grant.client_id) ?? []), grant]);
  const clients = byClient.size === 0 ? new Map() : await findClients(deps.table, [...byClient.keys()]);
  const items: AuthorizedClient[] = [];
  for (const [clientId, held] of byClient) {
    const client = clients.get(clientId);
    if (!client || client.deleted_at !== null) continue;
    const registration = client.registration;
    const scopes = [...new Set(held.flatMap((grant) => grant.scope.split(' ').filter(Boolean)))];
    const ends = held.map((grant) => grant.expires_at ?? grant.refresh_expires_at ?? grant.access_expires_at);
    items.push({
      client_id: clientId,
      client_name: text(registration.client_name),
      client_uri: text(registration.client_uri),
      logo_uri: text(registration.logo_uri),
      scope: scopes.join(' '),
      organization_ids: [...new Set(held.flatMap((grant) => grant.organization_ids))],
      authorized_at: held.map((grant) => grant.created_at).sort()[0] as string,
      expires_at: ends.sort().at(-1) as string,
    });
  }
  items.sort((a, b) => a.authorized_at.localeCompare(b.authorized_at));
  return { items };
}

export async function revokeAuthorizedClient(
  deps: Dependencies,
  principal: UserPrincipal,
  clientId: string,
): Promise<void> {
  const held = (await liveGrants(deps, principal.userId)).filter((grant) => grant.client_id === clientId);
  if (held.length === 0) throw new ResourceNotFound();
  const now = deps.now().toISOString();
  for (const grant of held) {
    if (await revokeGrant(deps.table, grant.grant_id, now)) countBusinessEvent('OAuthTokenFamiliesRevoked');
  }
}

/** What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`. */
export const operationAccess = (): OperationAccess => ({
  listAuthorizedClients: {
    table: [...tokensAccess.findToken, ...oauthGrantsAccess.listUserGrants, ...oauthGrantsAccess.findClients],
  },
  revokeAuthorizedClient: {
    table: [
      oneStatement(tokensAccess.findToken, oauthGrantsAccess.findGrant),
      ...oauthGrantsAccess.listUserGrants,
      ...oauthGrantsAccess.revokeGrant,
    ],
  },
});
