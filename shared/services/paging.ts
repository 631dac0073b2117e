/**
 * `page` and `limit` of every list: page 1 and 10 items by default, a limit above 100 served as 100
 * (clamped, not refused), `max_page` computed with the limit served.
 */
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

export interface PageWindow {
  limit: number;
  offset: number;
}

export function pageWindow(query: { page?: number; limit?: number }): PageWindow {
  const limit = Math.min(query.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  return { limit, offset: ((query.page ?? 1) - 1) * limit };
}

export const pagination = (total: number, { limit }: PageWindow) => ({
  total_count: total,
  max_page: Math.ceil(total / limit),
});
