import { oauth, step } from '#test/support/iam-kit.ts';
import { defineCard } from './card.ts';

export default defineCard({
  name: 'userinfo',
  sample: {
    label: 'UserInfo',
    status: 200,
  },
  iam: async (world) => {
    const user = await world.call('GET', '/v1/oauth2/userinfo', { token: world.demo.personal_access_token });
    const organization = await world.call('GET', '/v1/oauth2/userinfo', { token: oauth.organizationToken });
    return [
      step('the user, with the email scope', user, 200),
      step("an organization's OAuth token, with the profile scope", organization, 200),
    ];
  },
  isolation: { namesNoResource: 'it answers who the credential itself acts for' },
  dynamoWork: [
    {
      key: 'userinfo',
      label: 'UserInfo (with the email scope)',
      status: 200,
      target: 2,
      send: (world) =>
        world.call('userinfo', 'GET', '/v1/oauth2/userinfo', { token: world.demo.personal_access_token }),
    },
  ],
});
