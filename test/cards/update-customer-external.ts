import { randomUUID } from 'node:crypto';
import { EXTERNAL_ID } from '#test/bench/fixture.ts';
import { customerChangeCase } from '#test/bench/work-kit.ts';
import { freshCustomer, step } from '#test/support/iam-kit.ts';
import { externalIdRow } from '#test/support/isolation-kit.ts';
import { insertLegacyCustomer } from '#test/support/legacy-customers.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'update-customer-external',
  sample: {
    label: 'Update Customer by external id',
    status: 200,
    params: { external_id: EXTERNAL_ID },
    body: { name: 'Ada L.' },
  },
  iam: async (world) => {
    const { externalId } = await freshCustomer(world);
    const changed = await world.call('PATCH', `/v1/customers/external/${externalId}`, {
      token: world.demo.personal_access_token,
      body: { name: 'IAM renamed', email: `iam-moved-${randomUUID()}@example.com` },
    });
    // A customer listed before the shards: the change moves it into its shard (both counts adjusted).
    const old = await insertLegacyCustomer(world.table, world.demo.organization_id, 2);
    const moved = await world.call('PATCH', `/v1/customers/external/${old.external_id}`, {
      token: world.demo.personal_access_token,
      body: { name: 'IAM moved' },
    });
    // Its organization now holds old guards (not marked): a new address is also checked free at its
    // old key in `ORG#<org>`.
    const readdressed = await world.call('PATCH', `/v1/customers/external/${externalId}`, {
      token: world.demo.personal_access_token,
      body: { email: `iam-again-${randomUUID()}@example.com` },
    });
    return [
      step('change e-mail and name', changed, 200),
      step('change a customer of the old list partition', moved, 200),
      step('change the e-mail in an organization not yet migrated', readdressed, 200),
    ];
  },
  isolation: () => externalIdRow('PATCH'),
  dynamoWork: [customerChangeCase('update-customer-external', 'Update Customer by external id', 'external')],
});
