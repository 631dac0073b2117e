/**
 * Issue 25's must-show: ≥ 500 concurrent Create Subscription on one product (a freemium launch:
 * every signup through the one free plan, each for its own new customer) end in 500 × 201 and not
 * one transaction conflict, with DynamoDB's transaction-conflict semantics emulated
 * (`conflicts.ts`: DynamoDB Local has none). Long suite `npm run test:scale`.
 *
 * On the design before it (main 1536c51: every signup's transaction condition-checked
 * `PRODUCT#<id>` and added to its lists' count shards) the same test ended in a few 201s and
 * hundreds of 503s (see the commit that added it).
 *
 * The customers are created first, outside the emulation (as the operator CLI does); then the signups are sent all at once
 * through the real handler, under its own IAM policy. At most 32 DynamoDB calls reach DynamoDB Local
 * at once (the others wait before the emulator, holding nothing): a flood of 500 would otherwise
 * queue inside DynamoDB Local's one process, which DynamoDB itself would not do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomerIn } from '#shared/services/create-customer.ts';
import { createWorld, type World } from '#test/support/world.ts';
import { ConflictEmulator, limitInFlight } from './conflicts.ts';

const N = 500;
const MAX_IN_FLIGHT = 32;

let world: World;
beforeAll(async () => {
  world = await createWorld('concurrent-subscriptions');
});
afterAll(async () => {
  await world?.drop();
});

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>) {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) {
    out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  }
  return out;
}

describe('concurrent Create Subscription on one product', () => {
  // A deadline for a hung run, not a wait: on a loaded 2-core machine the run has taken minutes.
  it(`${N} signups at once: ${N} × 201, no transaction conflict`, { timeout: 900_000 }, async () => {
    const token = world.demo.personal_access_token;
    const product = world.demo.free_product_id;
    // As the operator CLI creates them (the service's own function, straight to DynamoDB Local).
    const customers = await inBatches(
      Array.from({ length: N }, (_, i) => i),
      25,
      async (i) =>
        (
          await createCustomerIn(world.admin, world.demo.organization_id, {
            email: `signup-${i}@example.com`,
            name: `Signup ${i}`,
          })
        ).id,
    );

    const doc = world.depsFor('create-subscription').table.doc;
    limitInFlight(doc, MAX_IN_FLIGHT);
    const emulator = new ConflictEmulator();
    emulator.install(doc);

    const replies = await Promise.all(
      customers.map((customer) =>
        world.call('POST', '/v1/subscriptions/', {
          token,
          body: { product_id: product, customer_id: customer },
        }),
      ),
    );
    const byStatus: Record<number, number> = {};
    for (const reply of replies) byStatus[reply.status] = (byStatus[reply.status] ?? 0) + 1;
    const conflictItems = new Map<string, number>();
    for (const conflict of emulator.conflicts) {
      for (const item of conflict.items) {
        const shape = item
          .split('\u0000')
          .slice(1)
          .join(' / ')
          .replace(/[0-9a-f-]{36}/g, '<id>');
        conflictItems.set(shape, (conflictItems.get(shape) ?? 0) + 1);
      }
    }
    // What a failure looks like (printed, so that a run on another design says where it conflicted).
    console.warn(
      `${N} concurrent signups: ${JSON.stringify(byStatus)}; transactions committed ${emulator.committed}, ` +
        `refused for a conflict ${emulator.conflicts.length}; by item: ${JSON.stringify(Object.fromEntries(conflictItems))}`,
    );
    expect(byStatus).toEqual({ 201: N });
    expect(emulator.conflicts).toEqual([]);
    expect(emulator.committed).toBe(N);
    // Every one of them is there: N subscriptions of the product, each for its own customer.
    expect(new Set(replies.map((reply) => reply.body.customer_id))).toEqual(new Set(customers));
  });
});
