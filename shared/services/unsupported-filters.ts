import { PolarRequestValidationError } from '../domain/errors.ts';
import { queryIssue } from './paging.ts';

/**
 * Filters of the hosted service that no key of a list can answer: each one given is refused with a
 * 422 `PolarRequestValidationError` naming it, rather than ignored (a client would take an unfiltered
 * list for a filtered one).
 */
export function refuseUnsupported<Q extends object>(
  query: Q,
  unsupported: Readonly<Partial<Record<keyof Q & string, string>>>,
): void {
  const values = query as Record<string, unknown>;
  const refused = (Object.keys(unsupported) as (keyof Q & string)[])
    .filter((name) => values[name] !== undefined)
    .map((name) => queryIssue(name, unsupported[name] as string, values[name]));
  if (refused.length > 0) throw new PolarRequestValidationError(refused);
}
