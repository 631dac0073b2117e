import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createOnly, run, type Table, transact } from './dynamo.ts';
import { item, record, type SubscriptionRecord } from './records.ts';
import { gsi1, keys, ownerKeys } from './table.ts';

/**
 * Writes a subscription in one transaction that re-checks, at write time, what
 * the service read: the customer is live and in the product's organization, the
 * product is live and not archived. A concurrent delete or archive cancels the
 * write instead of leaving a subscription to something gone (ConditionFailed).
 */
export async function insertSubscription(table: Table, subscription: SubscriptionRecord): Promise<void> {
  const owner = ownerKeys.customer(subscription.customer_id);
  await transact(table, [
    {
      Put: createOnly(
        table,
        item(
          {
            ...keys.subscription(subscription.id),
            ...gsi1.ownedBy(owner, 'SUBSCRIPTION', subscription.created_at, subscription.id),
          },
          'subscription',
          // DynamoDB numbers cannot hold every JSON number (1e300, 1e-200, integers past
          // 2^53 in JavaScript), so client metadata is kept as its JSON text.
          { ...subscription, metadata: JSON.stringify(subscription.metadata) },
        ),
      ),
    },
    {
      ConditionCheck: {
        TableName: table.name,
        Key: keys.customer(subscription.customer_id),
        ConditionExpression:
          'attribute_exists(PK) AND deleted_at = :null AND organization_id = :organization',
        ExpressionAttributeValues: { ':null': null, ':organization': subscription.organization_id },
      },
    },
    {
      ConditionCheck: {
        TableName: table.name,
        Key: keys.product(subscription.product_id),
        ConditionExpression: 'attribute_exists(PK) AND deleted_at = :null AND is_archived = :false',
        ExpressionAttributeValues: { ':null': null, ':false': false },
      },
    },
  ]);
}

/** A stored subscription, its metadata parsed back from the JSON text it is kept as. */
export async function getSubscription(table: Table, id: string): Promise<SubscriptionRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.subscription(id) })),
  );
  if (!result.Item) return undefined;
  const stored = record<SubscriptionRecord & { metadata: unknown }>(result.Item);
  const metadata = typeof stored.metadata === 'string' ? JSON.parse(stored.metadata) : stored.metadata;
  return { ...stored, metadata };
}
