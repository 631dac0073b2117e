import { randomUUID } from 'node:crypto';

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Ids are UUID v4, lowercase. */
export const newId = (): string => randomUUID();

export const isUuid4 = (value: string): boolean => UUID4.test(value);

/** Ids are accepted in either case and stored and returned in lowercase. */
export const normalizeId = (value: string): string => value.toLowerCase();
