/** Quota settings for test worlds and local stacks (shared/http/quota.ts). */
import { DEFAULT_QUOTAS, type QuotaRule, type QuotaSettings } from '#shared/domain/limits.ts';

/**
 * The deployed quota keeper (`DEFAULT_QUOTAS`' windows, shards and leases) with limits no test run
 * reaches: every function counts its requests in the table under its deployed grant, as in prod, and
 * no scenario is refused with a 429 for sending the same token many times in 10 s. The IAM world
 * runs with it, so that the quota counter's grant is exercised like every other.
 */
export const UNREACHABLE_QUOTAS: QuotaSettings = Object.freeze(
  Object.fromEntries(
    Object.entries(DEFAULT_QUOTAS).map(([bucket, rule]: [string, QuotaRule]) => [
      bucket,
      { ...rule, limit: rule.limit * 100_000 },
    ]),
  ) as unknown as QuotaSettings,
);
