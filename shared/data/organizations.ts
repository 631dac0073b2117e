import { QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { run, type Table } from './dynamo.ts';
import { item, type MembershipRecord, type OrganizationRecord, type UserRecord } from './records.ts';
import { gsi1, indexNames, keys } from './table.ts';

export async function insertOrganization(table: Table, organization: OrganizationRecord): Promise<void> {
  await run(() =>
    table.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table.name,
              Item: item(keys.organization(organization.id), 'organization', organization),
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
          {
            // Slugs are unique across organizations.
            Put: {
              TableName: table.name,
              Item: {
                PK: `ORGSLUG#${organization.slug}`,
                SK: `ORGSLUG#${organization.slug}`,
                entity: 'slug',
                organization_id: organization.id,
              },
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
        ],
      }),
    ),
  );
}

export async function insertUser(table: Table, user: UserRecord): Promise<void> {
  await run(() =>
    table.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table.name,
              Item: item(keys.user(user.id), 'user', user),
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
          {
            Put: {
              TableName: table.name,
              Item: {
                PK: `USEREMAIL#${user.email.toLowerCase()}`,
                SK: `USEREMAIL#${user.email.toLowerCase()}`,
                entity: 'user_email',
                user_id: user.id,
              },
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
        ],
      }),
    ),
  );
}

/** The organizations a user belongs to (GSI1: `USER#id` → `MEMBER#…`). */
export async function organizationIdsOf(table: Table, userId: string): Promise<string[]> {
  const result = await run(() =>
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        IndexName: indexNames.gsi1,
        KeyConditionExpression: 'GSI1PK = :owner AND begins_with(GSI1SK, :kind)',
        ExpressionAttributeValues: { ':owner': `USER#${userId}`, ':kind': gsi1.ownerPrefix('MEMBER') },
      }),
    ),
  );
  return (result.Items ?? []).map((stored) => stored.organization_id as string);
}

/**
 * Adds a membership and, in the same transaction, the organization to every
 * personal access token of the user (tokens carry their user's organizations so
 * that authentication is a single read).
 */
export async function addMembership(table: Table, membership: MembershipRecord): Promise<void> {
  const tokens = await run(() =>
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        IndexName: indexNames.gsi1,
        KeyConditionExpression: 'GSI1PK = :owner AND begins_with(GSI1SK, :kind)',
        ExpressionAttributeValues: {
          ':owner': `USER#${membership.user_id}`,
          ':kind': gsi1.ownerPrefix('TOKEN'),
        },
      }),
    ),
  );
  await run(() =>
    table.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table.name,
              Item: item(
                {
                  ...keys.membership(membership.organization_id, membership.user_id),
                  ...gsi1.ownedBy(
                    `USER#${membership.user_id}`,
                    'MEMBER',
                    membership.created_at,
                    membership.organization_id,
                  ),
                },
                'membership',
                membership,
              ),
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
          ...(tokens.Items ?? []).map((token) => ({
            Update: {
              TableName: table.name,
              Key: { PK: token.PK as string, SK: token.SK as string },
              UpdateExpression: 'SET organization_ids = list_append(organization_ids, :org)',
              ExpressionAttributeValues: { ':org': [membership.organization_id] },
            },
          })),
        ],
      }),
    ),
  );
}
