/**
 * An item's size as DynamoDB counts it ("Item sizes and formats"), from the native values the
 * document client reads and writes: per attribute the UTF-8 length of its name plus its value's
 * size; a string its UTF-8 length, a number 1 byte per two significant digits plus 1, binary its
 * length, a boolean or null 1, a list or map 3 bytes plus 1 per element (and a map key's length),
 * a set the sum of its elements. Read units (1 per 4 KB, strongly consistent), the 400 KB item
 * limit and the 4 MB transaction limit are all counted in these bytes. `test/scale/capacity.ts`
 * applies the same rules to marshalled items.
 */
const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

function numberBytes(value: number | bigint): number {
  const mantissa = String(value).replace(/^-/, '').split(/[eE]/)[0] ?? '';
  const digits = mantissa.replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.max(1, Math.ceil(digits.length / 2)) + 1;
}

export function valueBytes(value: unknown): number {
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberBytes(value);
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) return [...value].reduce<number>((sum, element) => sum + valueBytes(element), 0);
  if (Array.isArray(value))
    return 3 + value.reduce<number>((sum, element) => sum + valueBytes(element) + 1, 0);
  if (typeof value === 'object') {
    // A number set of the document client (NumberValue) or a map.
    if ('value' in value && Object.keys(value).length === 1) return numberBytes(Number(value.value));
    return (
      3 +
      Object.entries(value as Record<string, unknown>).reduce(
        (sum, [key, element]) => sum + utf8(key) + valueBytes(element) + 1,
        0,
      )
    );
  }
  return 0;
}

/** The stored size of an item (native values), in bytes. */
export const itemBytes = (item: Readonly<Record<string, unknown>>): number =>
  Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueBytes(value), 0);

/** DynamoDB's largest item: 400 KB. */
export const MAX_ITEM_BYTES = 400 * 1024;
