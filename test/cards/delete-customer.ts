import { CUSTOMER } from '#test/bench/fixture.ts';
import { customerChangeCase } from '#test/bench/work-kit.ts';
import { freshCustomer, step } from '#test/support/iam-kit.ts';
import { customerRow } from '#test/support/isolation-kit.ts';
import { insertLegacyCustomer } from '#test/support/legacy-customers.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'delete-customer',
  sample: {
    label: 'Delete Customer',
    status: 204,
    params: { id: CUSTOMER },
  },
  iam: async (world) => {
    const { id } = await freshCustomer(world);
    const remove = () =>
      world.call('DELETE', `/v1/customers/${id}`, { token: world.demo.personal_access_token });
    const first = await remove();
    const second = await remove();
    // A customer whose guards are still in `ORG#<org>`: its deletion releases them there.
    const old = await insertLegacyCustomer(world.table, world.demo.organization_id, 3);
    const legacy = await world.call('DELETE', `/v1/customers/${old.id}`, {
      token: world.demo.personal_access_token,
    });
    return [
      step('delete', first, 204),
      step('delete again', second, 404),
      step('delete a customer whose guards are in the old place', legacy, 204),
    ];
  },
  isolation: () => customerRow('DELETE'),
  dynamoWork: [customerChangeCase('delete-customer', 'Delete Customer', 'id')],
});
