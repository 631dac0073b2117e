import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { LIVE, type LifecycleFields } from '../domain/subscription-lifecycle.ts';
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
  // Subscriptions stored before the lifecycle fields existed read as live ones.
  return { ...LIVE, ...stored, metadata };
}

/**
 * Writes a lifecycle change, conditioned on the subscription being exactly as it was read
 * (`modified_at` unchanged): of two concurrent changes one wins, the other finds the condition
 * failed and is re-decided on fresh data. Each write carries a random `change_id`, so that the SDK's
 * retry of a write whose answer was lost recognises its own change instead of reporting a conflict.
 * Answers the subscription as now stored.
 */
export async function updateSubscriptionLifecycle(
  table: Table,
  before: SubscriptionRecord,
  change: LifecycleFields,
  now: string,
): Promise<SubscriptionRecord> {
  const fields = Object.keys(change) as (keyof LifecycleFields)[];
  const changeId = randomUUID();
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.subscription(before.id),
          // `status` is a reserved word: every field goes through a name placeholder.
          UpdateExpression: `SET modified_at = :now, change_id = :change, ${fields.map((f) => `#${f} = :${f}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(PK) AND modified_at = :before',
          ExpressionAttributeValues: {
            ':now': now,
            ':before': before.modified_at,
            ':change': changeId,
            ...Object.fromEntries(fields.map((f) => [`:${f}`, change[f]])),
          },
          ExpressionAttributeNames: Object.fromEntries(fields.map((f) => [`#${f}`, f])),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed && error.item?.change_id === changeId)) throw error;
  }
  return { ...before, ...change, modified_at: now };
}
