import { benchRun } from '#test/bench/work-kit.ts';
import { key, run, step } from '#test/support/iam-kit.ts';
import { unmarkOrganization } from '#test/support/legacy-customers.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'create-customer',
  sample: {
    // A fresh address per event: the e-mail is unique in the organization.
    label: 'Create Customer',
    status: 201,
    body: () => ({ email: `bench+${Math.random().toString(36).slice(2)}@example.com`, name: 'Bench' }),
  },
  iam: async (world) => {
    const email = `iam-${run}-${Date.now()}@example.com`;
    const create = (body: unknown, idempotencyKey?: string) =>
      world.call('POST', '/v1/customers/', {
        token: world.demo.personal_access_token,
        body,
        ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
      });
    const created = await create({ email, external_id: `iam-${run}-${email}` }, key('customer'));
    const replayed = await create({ email, external_id: `iam-${run}-${email}` }, key('customer'));
    // Refused after claiming its key: the claim is released, so the retry runs again.
    const taken = await create({ email }, key('taken'));
    const retried = await create({ email }, key('taken'));
    // An organization from before the guards' own partitions: the values' old keys in `ORG#<org>`
    // are condition-checked free in the transaction (ConditionCheckItem there).
    await unmarkOrganization(world.table, world.demo.organization_id);
    const legacy = await create({ email: `old-${email}`, external_id: `iam-old-${run}-${email}` });
    return [
      step('create with both guards', created, 201),
      step('replay with the same key', replayed, 201, { reply: created, field: 'id' }),
      step('a taken e-mail, refused after claiming its key', taken, 422),
      step('retry of the refused request', retried, 422),
      step('create in an organization whose old guards are not yet moved', legacy, 201),
    ];
  },
  isolation: {
    namesNoResource:
      'a new customer names no existing resource; a foreign organization_id is covered by its own test',
  },
  dynamoWork: [
    {
      key: 'create-customer',
      label: 'Create Customer',
      status: 201,
      // The token, its organization's guard marker (docs/data-model.md, Customer guards), the transaction.
      target: 3,
      send: (world, i) =>
        world.call('create-customer', 'POST', '/v1/customers/', {
          token: world.demo.personal_access_token,
          body: { email: `bench+${benchRun}-${i}@example.com`, external_id: `bench-${benchRun}-${i}` },
        }),
    },
  ],
});
