import { softDeleteWebhookEndpoint } from '../data/webhooks.ts';
import { normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type { Dependencies } from '../runtime.ts';

/** Soft delete: the endpoint keeps its history and stops receiving events at once (`enabled` false). */
export async function deleteWebhookEndpoint(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
): Promise<void> {
  await softDeleteWebhookEndpoint(
    deps.table,
    normalizeId(id),
    principal.organizationIds,
    deps.now().toISOString(),
  );
}
