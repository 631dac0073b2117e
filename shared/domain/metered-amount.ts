/**
 * Metered prices' arithmetic, exact: `unit_amount` is a decimal number of cents (at most 17 digits,
 * 12 after the point, greater than 0, as the hosted service's `Numeric(17, 12)`), consumed units are
 * a meter's quantity (a double), credited units an integer. The amount is
 * `unit_amount × max(0, consumed − credited)` computed exactly (the double's exact binary value, as
 * the hosted service's `Decimal(float)`), rounded half away from zero to whole cents (its
 * `polar_round`), then capped by `cap_amount`. No float arithmetic touches money.
 */
import { addExact, type ExactSum, exactOf } from './meter.ts';

export const UNIT_AMOUNT_MAX_DIGITS = 17;
export const UNIT_AMOUNT_MAX_DECIMALS = 12;

interface Decimal {
  /** The digits as an integer. */
  units: bigint;
  /** Digits after the point. */
  scale: number;
}

/**
 * The canonical text of a unit amount (`"0.50"` → `"0.5"`, `"007"` → `"7"`, `1e-3` → `"0.001"`),
 * or a reason it is refused. Numbers are read from their shortest text, what the client wrote.
 */
export function parseUnitAmount(
  input: string | number,
): { ok: true; text: string } | { ok: false; msg: string } {
  const raw = typeof input === 'number' ? numberText(input) : input.trim();
  const match = raw === undefined ? null : /^\+?(\d*)(?:\.(\d*))?$/.exec(raw);
  if (!match || `${match[1]}${match[2] ?? ''}` === '') {
    return { ok: false, msg: 'The unit amount is a decimal number of cents, such as "0.5".' };
  }
  const whole = (match[1] ?? '').replace(/^0+/, '');
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > UNIT_AMOUNT_MAX_DECIMALS) {
    return { ok: false, msg: `The unit amount has at most ${UNIT_AMOUNT_MAX_DECIMALS} decimal places.` };
  }
  if (whole.length + UNIT_AMOUNT_MAX_DECIMALS > UNIT_AMOUNT_MAX_DIGITS) {
    return {
      ok: false,
      msg: `The unit amount has at most ${UNIT_AMOUNT_MAX_DIGITS - UNIT_AMOUNT_MAX_DECIMALS} digits before the point.`,
    };
  }
  if (whole === '' && fraction === '') return { ok: false, msg: 'The unit amount must be greater than 0.' };
  return { ok: true, text: `${whole || '0'}${fraction ? `.${fraction}` : ''}` };
}

/** A number's plain decimal text (no exponent), or undefined when it is not finite or negative. */
function numberText(value: number): string | undefined {
  if (!Number.isFinite(value) || value < 0) return undefined;
  const shortest = String(value);
  const exp = /^(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(shortest);
  if (!exp) return shortest;
  const digits = `${exp[1]}${exp[2] ?? ''}`;
  const point = (exp[1] as string).length + Number(exp[3]);
  if (point <= 0) return `0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return digits + '0'.repeat(point - digits.length);
  return `${digits.slice(0, point)}.${digits.slice(point)}`;
}

function decimal(text: string): Decimal {
  const [whole = '', fraction = ''] = text.split('.');
  return { units: BigInt(`${whole}${fraction}` || '0'), scale: fraction.length };
}

/**
 * The amount in cents: `unit_amount × max(0, consumed − credited)`, exact, rounded half away from
 * zero, capped by `cap_amount` when one is set, and at most 2^53 − 1 (every amount of this API is
 * an I-JSON integer).
 */
export function meteredAmount(
  unitAmount: string,
  capAmount: number | null,
  consumed: number,
  credited: number,
): number {
  const parsed = parseUnitAmount(unitAmount);
  if (!parsed.ok) throw new RangeError(`not a unit amount: ${unitAmount}`);
  const unit = decimal(parsed.text);
  const billable: ExactSum = addExact(exactOf(consumed), exactOf(-credited));
  const n = BigInt(billable.n);
  if (n <= 0n) return 0;
  // amount = unit.units / 10^scale × n × 2^e = num / den
  let num = unit.units * n;
  let den = 10n ** BigInt(unit.scale);
  if (billable.e >= 0) num <<= BigInt(billable.e);
  else den <<= BigInt(-billable.e);
  const rounded = (2n * num + den) / (2n * den); // half up (the value is positive)
  const limit = BigInt(Number.MAX_SAFE_INTEGER);
  const capped = capAmount !== null && rounded > BigInt(capAmount) ? BigInt(capAmount) : rounded;
  return Number(capped > limit ? limit : capped);
}
