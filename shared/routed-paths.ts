/**
 * Every path-and-method the HTTP API routes to a function (operations, reference, discovery), for
 * the `$default` function's 405s. Apart from `shared/operations.ts` so that its bundle carries the
 * routes only, never the grants of the route table.
 */
import { documentFunctions } from './document-functions.ts';
import { operationRoutes } from './generated/operations.ts';

export const routedPaths: readonly { method: string; path: string }[] = [
  ...operationRoutes,
  ...documentFunctions.flatMap((fn) => fn.routes),
];
