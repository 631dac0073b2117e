import { CUSTOMER } from '#test/bench/fixture.ts';
import { customerChangeCase } from '#test/bench/work-kit.ts';
import { freshCustomer, step } from '#test/support/iam-kit.ts';
import { customerRow } from '#test/support/isolation-kit.ts';
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
    return [step('delete', first, 204), step('delete again', second, 404)];
  },
  isolation: () => customerRow('DELETE'),
  dynamoWork: [customerChangeCase('delete-customer', 'Delete Customer', 'id')],
});
