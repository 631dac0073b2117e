import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { capCounterStart } from './caps.ts';
import { createOnly, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { item, type MembershipRecord, type OrganizationRecord, record, type UserRecord } from './records.ts';
import { CUSTOMER_GUARDS_MIGRATED, gsi1, indexNames, keys, LISTS_MIGRATED, ownerKeys } from './table.ts';

/**
 * An organization and its slug, unique across organizations, and its webhook endpoint cap's counter
 * at 0 (so that a create or delete of an endpoint is one transaction: shared/data/caps.ts). Born with
 * its customers' guards in their own partitions (`CUSTOMER_GUARDS_MIGRATED`, shared/data/customers.ts)
 * and its lists in their shards (`LISTS_MIGRATED`, every family).
 */
export async function insertOrganization(table: Table, organization: OrganizationRecord): Promise<void> {
  const migrated = {
    [CUSTOMER_GUARDS_MIGRATED.attribute]: CUSTOMER_GUARDS_MIGRATED.value,
    // Nothing of its lists ever in the old, unsharded partitions (shared/data/list-markers.ts).
    ...Object.fromEntries(Object.values(LISTS_MIGRATED).map((marker) => [marker.attribute, marker.value])),
  };
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(keys.organization(organization.id), 'organization', { ...organization, ...migrated }),
      ),
    },
    {
      Put: createOnly(table, {
        ...keys.organizationSlug(organization.slug),
        entity: 'organization_slug',
        organization_id: organization.id,
      }),
    },
    capCounterStart(table, 'webhookEndpoints', organization.id),
  ]);
}

/** A user and their e-mail address, unique across users, and their OAuth client cap's counter at 0. */
export async function insertUser(table: Table, user: UserRecord): Promise<void> {
  await transact(table, [
    { Put: createOnly(table, item(keys.user(user.id), 'user', user)) },
    { Put: createOnly(table, { ...keys.userEmail(user.email), entity: 'user_email', user_id: user.id }) },
    capCounterStart(table, 'oauthClients', user.id),
  ]);
}

/** Items of one kind owned by an owner key, oldest first (GSI1). */
export async function owned(
  table: Table,
  ownerKey: string,
  kind: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const exclusiveStartKey = startKey;
    const page = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          IndexName: indexNames.gsi1,
          KeyConditionExpression: 'GSI1PK = :owner AND begins_with(GSI1SK, :kind)',
          ExpressionAttributeValues: { ':owner': ownerKey, ':kind': gsi1.ownerPrefix(kind) },
          ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
        }),
      ),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/**
 * The organizations a user belongs to, from the user item's set (strongly consistent: a membership
 * removed a moment ago is not copied into a new token), oldest membership first where GSI1 knows it.
 */
export async function organizationIdsOf(table: Table, userId: string): Promise<string[]> {
  const [user, listed] = await Promise.all([
    run(() =>
      table.doc.send(new GetCommand({ TableName: table.name, Key: keys.user(userId), ConsistentRead: true })),
    ),
    owned(table, ownerKeys.user(userId), 'MEMBER'),
  ]);
  const current = userOrganizations(user.Item);
  const ordered = listed.map((stored) => stored.organization_id as string).filter((id) => current.has(id));
  return [...ordered, ...[...current].filter((id) => !ordered.includes(id)).sort()];
}

/**
 * The user item's set of the user's organizations, kept in the transaction that adds or removes a
 * membership: authentication of an OAuth access token reads it beside the token (shared/http/auth.ts),
 * so a removed membership ends at once for tokens already issued.
 */
function userMemberships(table: Table, userId: string, change: 'ADD' | 'DELETE', organizationId: string) {
  return {
    Update: {
      TableName: table.name,
      Key: keys.user(userId),
      UpdateExpression: `${change} organization_ids :org`,
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':org': new Set([organizationId]) },
    },
  };
}

/** The organizations of a user's item (`userMemberships`): a string set, absent when empty. */
export function userOrganizations(user: Record<string, unknown> | undefined): ReadonlySet<string> {
  const stored = user?.organization_ids;
  return stored instanceof Set ? (stored as Set<string>) : new Set();
}

/**
 * Adds a membership and, in the same transaction, the organization to every
 * personal access token of the user (tokens carry their user's organizations so
 * that authentication is a single read).
 */
export async function addMembership(table: Table, membership: MembershipRecord): Promise<void> {
  const owner = ownerKeys.user(membership.user_id);
  const tokens = await owned(table, owner, 'TOKEN');
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(
          {
            ...keys.membership(membership.organization_id, membership.user_id),
            ...gsi1.ownedBy(owner, 'MEMBER', membership.created_at, membership.organization_id),
          },
          'membership',
          membership,
        ),
      ),
    },
    userMemberships(table, membership.user_id, 'ADD', membership.organization_id),
    ...tokens.map((token) => ({
      Update: {
        TableName: table.name,
        Key: { PK: token.PK as string, SK: token.SK as string },
        UpdateExpression: 'SET organization_ids = list_append(organization_ids, :org)',
        ExpressionAttributeValues: { ':org': [membership.organization_id] },
      },
    })),
  ]);
}

/**
 * Removes a membership and, in the same transaction, the organization from every personal access
 * token of the user, so that a token already issued loses it at once (authentication reads only the
 * token item, so nothing is added to a request). False when there was no such membership. A token
 * changed concurrently (another membership added) makes the transaction fail: it is read and tried
 * again. The user item's set of organizations loses it in the same transaction: OAuth access tokens,
 * which keep the organizations of their consent, are judged against that set at every request.
 */
export async function removeMembership(
  table: Table,
  organizationId: string,
  userId: string,
): Promise<boolean> {
  const owner = ownerKeys.user(userId);
  for (let attempt = 0; ; attempt++) {
    const tokens = (await owned(table, owner, 'TOKEN')).filter((token) =>
      (token.organization_ids as string[] | undefined)?.includes(organizationId),
    );
    try {
      await transact(table, [
        {
          Delete: {
            TableName: table.name,
            Key: keys.membership(organizationId, userId),
            ConditionExpression: 'attribute_exists(PK)',
          },
        },
        userMemberships(table, userId, 'DELETE', organizationId),
        ...tokens.map((token) => ({
          Update: {
            TableName: table.name,
            Key: { PK: token.PK as string, SK: token.SK as string },
            UpdateExpression: 'SET organization_ids = :kept',
            ConditionExpression: 'organization_ids = :read',
            ExpressionAttributeValues: {
              ':kept': (token.organization_ids as string[]).filter((id) => id !== organizationId),
              ':read': token.organization_ids,
            },
          },
        })),
      ]);
      return true;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      if (error.reasons[0] === 'ConditionalCheckFailed') return false;
      if (attempt >= 4) throw error;
    }
  }
}

export async function findUser(table: Table, userId: string): Promise<UserRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.user(userId) })),
  );
  return result.Item ? record<UserRecord>(result.Item) : undefined;
}

/** An organization (its default currency), strongly consistent. */
export async function getOrganization(
  table: Table,
  organizationId: string,
): Promise<OrganizationRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.organization(organizationId), ConsistentRead: true }),
    ),
  );
  return result.Item ? record<OrganizationRecord>(result.Item) : undefined;
}

/** IAM (shared/data/grants.ts). */
export const access = {
  findUser: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['user'] }],
  getOrganization: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['organization'] }],
} as const satisfies DataAccess;
