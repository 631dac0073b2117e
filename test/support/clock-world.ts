/**
 * The subscription clock's integration files (test/integration/subscription-clock*.test.ts): a world
 * with a customer of its demo organization and a user principal that may change subscriptions, and
 * the subscriptions a test makes revoked after it.
 *
 * Their dates lie before the demo seed's (made at the real time of the run), so no clock run of
 * theirs renews the seed's subscriptions; and a later test's run (years on) would renew an earlier
 * test's subscriptions once per period in between, hence the revocation after each test (at
 * `revokeAt`, after every date the file uses).
 */
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createCustomer } from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import type { UserPrincipal } from '#shared/domain/principals.ts';
import type { Subscription } from '#shared/generated/api-types.ts';
import { createSubscription } from '#shared/services/create-subscription.ts';
import { changeSubscription } from '#shared/services/update-subscription.ts';
import { createWorld, type World } from './world.ts';

export interface ClockWorld {
  /** Set by the file's first beforeAll. */
  world: World;
  principal: UserPrincipal;
  customerId: string;
  /** The customer's subscription to `productId`, made at `iso` (revoked after the test). */
  subscribeAt(iso: string, productId: string): Promise<Subscription>;
  /** The subscription's item as stored, read strongly consistent. */
  stored(id: string): Promise<Record<string, unknown>>;
}

/** Registers the file's hooks; the world's fields are there from its first beforeAll on. */
export function useClockWorld(name: string, revokeAt: string): ClockWorld {
  const created: string[] = [];
  const clock = {
    subscribeAt: async (iso: string, productId: string) => {
      const subscription = await createSubscription(
        { ...clock.world.admin, now: () => new Date(iso) },
        clock.principal,
        { product_id: productId, customer_id: clock.customerId },
      );
      created.push(subscription.id);
      return subscription;
    },
    stored: async (id: string) =>
      (
        await clock.world.table.doc.send(
          new GetCommand({
            TableName: clock.world.table.name,
            Key: keys.subscription(id),
            ConsistentRead: true,
          }),
        )
      ).Item as Record<string, unknown>,
  } as ClockWorld;

  beforeAll(async () => {
    clock.world = await createWorld(name);
    clock.customerId = (
      await createCustomer(clock.world.admin, {
        organizationId: clock.world.demo.organization_id,
        email: `${name}+${randomUUID()}@example.com`,
      })
    ).id;
    clock.principal = {
      kind: 'user',
      userId: `${name}-test`,
      tokenId: `${name}-test`,
      organizationIds: [clock.world.demo.organization_id],
      scopes: new Set(['subscriptions:write']),
    };
  });
  afterEach(async () => {
    const ids = created.splice(0);
    await Promise.all(
      ids.map(async (id) => {
        if ((await clock.stored(id)).ended_at) return;
        await changeSubscription(
          { ...clock.world.admin, now: () => new Date(revokeAt) },
          clock.principal,
          id,
          { kind: 'revoke' },
        );
      }),
    );
  });
  afterAll(() => clock.world?.drop());
  return clock;
}
