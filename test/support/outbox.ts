/** Reading the outbox as an operator would: an object's event items, in their stored order. */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { recordDeliveredWebhookEvent } from '#scripts/admin/commands.ts';
import type { Table } from '#shared/data/dynamo.ts';
import { partitions } from '#shared/data/table.ts';
import type { World } from './world.ts';

export interface StoredEvent {
  SK: string;
  id: string;
  type: string;
  organization_id: string;
  timestamp: string;
  payload: string;
  expires_ttl: number;
  // biome-ignore lint/suspicious/noExplicitAny: the envelope's data is the API's JSON
  envelope: { type: string; timestamp: string; data: any };
}

export async function outboxOf(
  table: Table,
  kind: 'customer' | 'product' | 'subscription' | 'meter',
  id: string,
): Promise<StoredEvent[]> {
  const result = await table.doc.send(
    new QueryCommand({
      TableName: table.name,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': `${partitions.event}${kind.toUpperCase()}#${id}` },
      ConsistentRead: true,
    }),
  );
  return (result.Items ?? []).map((item) => ({
    ...(item as Omit<StoredEvent, 'envelope'>),
    envelope: JSON.parse(String(item.payload)),
  }));
}

export const typesOf = (events: StoredEvent[]) => events.map((event) => event.type);

/** A delivered webhook event with its attempt, straight in the table (`recordDeliveredWebhookEvent`). */
export const seedWebhookEvent = (table: Table, organizationId: string, endpointId: string, at = new Date()) =>
  recordDeliveredWebhookEvent({ table }, { organizationId, endpointId, at });

/**
 * A delivered webhook event whose payload is in a real outbox item (a fresh customer's
 * `customer.created`, created through the API), as the relay and the deliverer record one.
 */
export async function seedWebhookEventFromOutbox(
  world: { table: Table; call: World['call']; demo: World['demo'] },
  organizationId: string,
  endpointId: string,
  token: string,
) {
  const created = await world.call('POST', '/v1/customers/', {
    token,
    body: { email: `outbox-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com` },
  });
  if (created.status !== 201) throw new Error(`Create Customer answered ${created.status}`);
  const [event] = await outboxOf(world.table, 'customer', created.body.id);
  if (!event) throw new Error('no outbox item');
  const stored = event as unknown as { PK: string; SK: string };
  return recordDeliveredWebhookEvent(
    { table: world.table },
    {
      organizationId,
      endpointId,
      outbox: { PK: stored.PK, SK: stored.SK, id: event.id, type: event.type, payload: event.payload },
    },
  );
}
