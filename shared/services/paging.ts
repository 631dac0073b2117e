import { PolarRequestValidationError, type ValidationIssue } from '../domain/errors.ts';

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

/** A 422 issue about one query parameter. */
export const queryIssue = (name: string, msg: string, input: unknown): ValidationIssue => ({
  loc: ['query', name],
  msg,
  type: 'value_error',
  input,
});

/** A name prefix (`query`) matching more `things` of one organization than a list reads: the 422 at `query`. */
export const tooManyMatches = (things: string, limit: number, input: unknown): PolarRequestValidationError =>
  new PolarRequestValidationError([
    queryIssue(
      'query',
      `More than ${limit} ${things} of one organization start with this text: use a longer one.`,
      input,
    ),
  ]);

export const pagination = (total: number, { limit }: PageWindow) => ({
  total_count: total,
  max_page: Math.ceil(total / limit),
});

/**
 * Lambda answers at most 6 MB (6,291,456 bytes) of a synchronous invocation, the API Gateway
 * envelope included, in which the body is a JSON string (every `"` and `\\` escaped once more). A
 * list answer is bounded below it with room for the envelope and headers.
 */
export const MAX_ANSWER_BYTES = 6_000_000;

/** The bytes a body takes in Lambda's answer: its JSON text, as a JSON string. */
export const answerBytes = (body: unknown): number => Buffer.byteLength(JSON.stringify(JSON.stringify(body)));

/**
 * A list answer that fits Lambda's answer, or a 422 at `limit` asking for a smaller one: the
 * contract's `page` and `limit` keep their meaning (a page is never cut short).
 */
export function withinAnswerLimit<T extends { items: unknown[] }>(
  answer: T,
  refusal: (issues: ValidationIssue[]) => Error = (issues) => new PolarRequestValidationError(issues),
): T {
  if (answerBytes(answer) <= MAX_ANSWER_BYTES) return answer;
  throw refusal([
    {
      loc: ['query', 'limit'],
      msg: `The ${answer.items.length} objects of this page are too large for one answer (6 MB): use a smaller limit.`,
      type: 'value_error',
    },
  ]);
}
