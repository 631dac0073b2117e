/**
 * The retry ladder of a delivery: when the n-th failed attempt is retried. Exponential, capped, with
 * "equal jitter" (half fixed, half random) so that endpoints that failed together do not all retry
 * together. The first retry comes within seconds, as the hosted service's (about 4 s).
 *
 * | after attempt | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 |
 * |---|---|---|---|---|---|---|---|---|---|
 * | delay (upper bound) | 5 s | 30 s | 2 min | 10 min | 30 min | 1 h | 3 h | 6 h | 12 h |
 *
 * Ten attempts over about 22 hours (11 to 22 h with the jitter): long enough to ride out a receiver's
 * deploy or an outage of a working day, short enough that an event is not delivered days late.
 * 12 h is SQS's largest visibility timeout, so each wait is one ChangeMessageVisibility.
 */
export const RETRY_DELAYS_SECONDS = [5, 30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/** Seconds to wait after the `attempt`-th failure (1-based), or null once the attempts are spent. */
export function retryDelaySeconds(attempt: number, random: () => number = Math.random): number | null {
  const ceiling = RETRY_DELAYS_SECONDS[attempt - 1];
  if (ceiling === undefined) return null;
  return Math.max(1, Math.round(ceiling / 2 + random() * (ceiling / 2)));
}
