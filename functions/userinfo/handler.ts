import { userinfoSecurity } from '#shared/generated/security.ts';
import { api } from '#shared/http/api.ts';
import { json } from '#shared/http/responses.ts';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { userinfo } from '#shared/services/userinfo.ts';

export const createHandler = (deps: Dependencies) =>
  api({ deps, ...userinfoSecurity }, async ({ principal }) => json(200, await userinfo(deps, principal)));

export const handler = createHandler(productionDependencies());
