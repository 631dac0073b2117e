import { randomUUID } from 'node:crypto';
import { WALLET } from '#test/bench/fixture.ts';
import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-wallet',
  sample: {
    label: 'Get Wallet',
    status: 200,
    params: { id: WALLET },
  },
  iam: async (world) => {
    const token = world.demo.customer_session_token;
    const page = await world.call('GET', '/v1/customer-portal/wallets/?limit=1', { token });
    const found = await world.call('GET', `/v1/customer-portal/wallets/${page.body.items[0].id}`, { token });
    const unknown = await world.call('GET', `/v1/customer-portal/wallets/${randomUUID()}`, { token });
    return [step('its own wallet', found, 200), step('an unknown wallet', unknown, 404)];
  },
  isolation: ({ world, sessions }) => ({
    ids: async () => {
      const walletOf = async (token: string) =>
        (await world.call('GET', '/v1/customer-portal/wallets/?limit=1', { token })).body.items[0]
          .id as string;
      const otherSession = sessions.find((s) => s.customerId === world.demo.other_organization.customer_id);
      return [
        [
          'wallet of another customer of the organization',
          await walletOf(world.demo.second_customer_session_token),
        ],
        ['wallet of another organization', await walletOf(otherSession?.token as string)],
      ];
    },
    send: (id) =>
      world.call('GET', `/v1/customer-portal/wallets/${id}`, { token: world.demo.customer_session_token }),
  }),
  dynamoWork: [
    {
      key: 'get-wallet',
      label: 'Get Wallet',
      status: 200,
      target: 2,
      prepare: async (world) => {
        const page = await world.call('list-wallets', 'GET', '/v1/customer-portal/wallets/?limit=1', {
          token: world.demo.customer_session_token,
        });
        walletToGet = JSON.parse(page.body ?? '{}').items[0].id;
      },
      send: (world) =>
        world.call('get-wallet', 'GET', `/v1/customer-portal/wallets/${walletToGet}`, {
          token: world.demo.customer_session_token,
        }),
    },
  ],
});

let walletToGet = '';
