import { createHash, randomUUID } from 'node:crypto';

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Ids are UUID v4, lowercase. */
export const newId = (): string => randomUUID();

export const isUuid4 = (value: string): boolean => UUID4.test(value);

/** Ids are accepted in either case and stored and returned in lowercase. */
export const normalizeId = (value: string): string => value.toLowerCase();

/**
 * A UUID (version 4 layout) derived from `parts`: SHA-256 of the parts joined by NUL, its version and
 * variant bits set. The same parts always give the same id (an idempotent write's key).
 */
export function derivedId(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
