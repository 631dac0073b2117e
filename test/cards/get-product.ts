import { randomUUID } from 'node:crypto';
import { PRODUCT } from '#test/bench/fixture.ts';
import type { LocalWorld } from '#test/bench/local-table.ts';
import { pkceOf } from '#test/bench/work-kit.ts';
import { step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'get-product',
  sample: {
    label: 'Get Product',
    status: 200,
    params: { id: PRODUCT },
  },
  iam: async (world) => {
    const get = (id: string) =>
      world.call('GET', `/v1/products/${id}`, { token: world.demo.personal_access_token });
    return [
      step('a product', await get(world.demo.free_product_id), 200),
      step('an unknown product', await get(randomUUID()), 404),
    ];
  },
  isolation: ({ world, deletedProductId }) => ({
    ids: async () => [
      ['product of another organization', world.demo.other_organization.free_product_id],
      ['deleted product', deletedProductId],
    ],
    send: (id) => world.call('GET', `/v1/products/${id}`, { token: world.demo.personal_access_token }),
  }),
  dynamoWork: [
    {
      key: 'get-product',
      label: 'Get Product',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('get-product', 'GET', `/v1/products/${world.demo.free_product_id}`, {
          token: world.demo.personal_access_token,
        }),
    },
    {
      key: 'get-product-oauth',
      label: 'Get Product with an OAuth access token',
      status: 200,
      // The token and its client's liveness item are one BatchGetItem: the same 2 as with a PAT.
      target: 2,
      prepare: async (world) => {
        productReader ??= await productReaderToken(world);
      },
      send: (world) =>
        world.call('get-product', 'GET', `/v1/products/${world.demo.free_product_id}`, {
          token: productReader as string,
        }),
    },
  ],
});

/** An access token with products:read, of a client registered (once) for it. */
let productReader: string | undefined;

async function productReaderToken(world: LocalWorld): Promise<string> {
  const pat = world.demo.personal_access_token;
  const registered = await world.call('create-client', 'POST', '/v1/oauth2/register', {
    token: pat,
    body: {
      client_name: 'Bench reader',
      redirect_uris: ['https://app.example.com/callback'],
      scope: 'products:read',
    },
  });
  const client = JSON.parse(registered.body ?? '{}') as { client_id: string; client_secret: string };
  const { verifier, challenge } = pkceOf(9999);
  const consented = await world.call('consent', 'POST', '/v1/oauth2/consent', {
    token: pat,
    body: {
      action: 'allow',
      response_type: 'code',
      client_id: client.client_id,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    },
  });
  const code = new URL(String(consented.headers.Location)).searchParams.get('code') as string;
  const exchanged = await world.call('request-token', 'POST', '/v1/oauth2/token', {
    form: {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      client_secret: client.client_secret,
    },
  });
  return (JSON.parse(exchanged.body ?? '{}') as { access_token: string }).access_token;
}
