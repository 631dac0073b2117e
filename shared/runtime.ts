/**
 * Production wiring: environment read once, one client per container, created
 * at module scope by each handler. Missing configuration fails the cold start
 * loudly instead of failing every request.
 */
import { createDocumentClient, type Table } from './data/dynamo.ts';
import { TABLE_NAME_ENV } from './operations.ts';

export interface Dependencies {
  table: Table;
  now: () => Date;
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`Missing required environment variable ${name}`);
  return value;
}

export function productionDependencies(): Dependencies {
  return { table: { doc: createDocumentClient(), name: requireEnv(TABLE_NAME_ENV) }, now: () => new Date() };
}
