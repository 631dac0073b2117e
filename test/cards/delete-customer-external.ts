import { EXTERNAL_ID } from '#test/bench/fixture.ts';
import { customerChangeCase } from '#test/bench/work-kit.ts';
import { freshCustomer, step } from '#test/support/iam-kit.ts';
import { externalIdRow } from '#test/support/isolation-kit.ts';
import { insertLegacyCustomer } from '#test/support/legacy-customers.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'delete-customer-external',
  sample: {
    label: 'Delete Customer by external id',
    status: 204,
    params: { external_id: EXTERNAL_ID },
  },
  iam: async (world) => {
    const { externalId } = await freshCustomer(world);
    const remove = () =>
      world.call('DELETE', `/v1/customers/external/${externalId}`, {
        token: world.demo.personal_access_token,
      });
    const first = await remove();
    const second = await remove();
    // A customer whose guards are still in `ORG#<org>`: its deletion releases them there.
    const old = await insertLegacyCustomer(world.table, world.demo.organization_id, 3);
    const legacy = await world.call('DELETE', `/v1/customers/external/${old.external_id}`, {
      token: world.demo.personal_access_token,
    });
    return [
      step('delete', first, 204),
      step('delete again', second, 404),
      step('delete a customer whose guards are in the old place', legacy, 204),
    ];
  },
  isolation: () => externalIdRow('DELETE'),
  dynamoWork: [customerChangeCase('delete-customer-external', 'Delete Customer by external id', 'external')],
});
