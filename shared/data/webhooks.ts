import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed, ResourceNotFound } from '../domain/errors.ts';
import { putNew, run, type Table } from './dynamo.ts';
import { item, type WebhookEndpointRecord } from './records.ts';
import { gsi1, keys, ownerKeys } from './table.ts';

export async function insertWebhookEndpoint(table: Table, endpoint: WebhookEndpointRecord): Promise<void> {
  const owner = ownerKeys.organization(endpoint.organization_id);
  await putNew(
    table,
    item(
      {
        ...keys.webhookEndpoint(endpoint.id),
        ...gsi1.ownedBy(owner, 'WEBHOOK', endpoint.created_at, endpoint.id),
      },
      'webhook_endpoint',
      endpoint,
    ),
  );
}

/**
 * Soft delete in one conditional write: the endpoint must exist, be live and
 * belong to one of the caller's organizations. Of concurrent deletes exactly one
 * passes the condition; every other case is indistinguishable: not found.
 */
export async function softDeleteWebhookEndpoint(
  table: Table,
  endpointId: string,
  organizationIds: readonly string[],
  now: string,
): Promise<void> {
  if (organizationIds.length === 0) throw new ResourceNotFound();
  const orgValues = Object.fromEntries(organizationIds.map((id, i) => [`:org${i}`, id]));
  // Marks this deletion, so that an SDK retry of it (its first answer lost, the write
  // applied) recognises its own work: a 204, not the 404 of someone else's deletion.
  const deletionId = randomUUID();
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.webhookEndpoint(endpointId),
          UpdateExpression:
            'SET deleted_at = :now, modified_at = :now, enabled = :false, deletion_id = :deletion',
          ConditionExpression: `attribute_exists(PK) AND deleted_at = :null AND organization_id IN (${Object.keys(orgValues).join(', ')})`,
          ExpressionAttributeValues: {
            ':now': now,
            ':false': false,
            ':null': null,
            ':deletion': deletionId,
            ...orgValues,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  } catch (error) {
    if (error instanceof ConditionFailed) {
      if (error.item?.deletion_id === deletionId) return;
      throw new ResourceNotFound();
    }
    throw error;
  }
}
