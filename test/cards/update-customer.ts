import { randomUUID } from 'node:crypto';
import { CUSTOMER } from '#test/bench/fixture.ts';
import { customerChangeCase } from '#test/bench/work-kit.ts';
import { freshCustomer, step } from '#test/support/iam-kit.ts';
import { customerRow } from '#test/support/isolation-kit.ts';
import { insertLegacyCustomer } from '#test/support/legacy-customers.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'update-customer',
  sample: {
    // The fake table applies no write: each run changes, or deletes, the same live customer.
    label: 'Update Customer',
    status: 200,
    params: { id: CUSTOMER },
    body: { name: 'Ada L.' },
  },
  iam: async (world) => {
    const { id } = await freshCustomer(world, false);
    // A new e-mail address (one guard released, one taken), a first external id (a guard taken), a
    // new name (entries moved).
    const changed = await world.call('PATCH', `/v1/customers/${id}`, {
      token: world.demo.personal_access_token,
      body: {
        name: 'IAM renamed',
        email: `iam-moved-${randomUUID()}@example.com`,
        external_id: `iam-${randomUUID()}`,
      },
    });
    // A customer listed before the shards (its entries in LIST#CUSTOMER#<org>): the change moves it
    // into its shard, both counts adjusted (UpdateItem on the list partitions).
    const old = await insertLegacyCustomer(world.table, world.demo.organization_id, 1);
    const moved = await world.call('PATCH', `/v1/customers/${old.id}`, {
      token: world.demo.personal_access_token,
      body: { name: 'IAM moved' },
    });
    // Its organization now holds old guards (not marked): a new address is also checked free at its
    // old key in `ORG#<org>`.
    const readdressed = await world.call('PATCH', `/v1/customers/${id}`, {
      token: world.demo.personal_access_token,
      body: { email: `iam-again-${randomUUID()}@example.com` },
    });
    return [
      step('change e-mail, name and external id', changed, 200),
      step('change a customer of the old list partition', moved, 200),
      step('change the e-mail in an organization not yet migrated', readdressed, 200),
    ];
  },
  isolation: () => customerRow('PATCH'),
  dynamoWork: [customerChangeCase('update-customer', 'Update Customer (new e-mail address and name)', 'id')],
});
