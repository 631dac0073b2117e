import { describe, expect, it } from 'vitest';
import { addInterval, nextPeriodEnd, type RecurringInterval } from '#shared/domain/period.ts';

const at = (iso: string) => new Date(iso);
const end = (start: string, interval: Parameters<typeof addInterval>[1], count = 1) =>
  addInterval(at(start), interval, count).toISOString();

describe('billing period arithmetic', () => {
  it('adds a month keeping the day and the time of day', () => {
    expect(end('2026-03-15T08:30:00.123Z', 'month')).toBe('2026-04-15T08:30:00.123Z');
  });

  it('clamps month ends: 31 January + 1 month is the last day of February', () => {
    expect(end('2026-01-31T10:00:00.000Z', 'month')).toBe('2026-02-28T10:00:00.000Z');
    expect(end('2028-01-31T10:00:00.000Z', 'month')).toBe('2028-02-29T10:00:00.000Z');
    expect(end('2026-03-31T23:59:59.999Z', 'month')).toBe('2026-04-30T23:59:59.999Z');
  });

  it('does not drift when counting several months from a month end', () => {
    expect(end('2026-01-31T00:00:00.000Z', 'month', 2)).toBe('2026-03-31T00:00:00.000Z');
    expect(end('2026-08-31T00:00:00.000Z', 'month', 6)).toBe('2027-02-28T00:00:00.000Z');
  });

  it('crosses year boundaries', () => {
    expect(end('2026-11-30T12:00:00.000Z', 'month', 3)).toBe('2027-02-28T12:00:00.000Z');
    expect(end('2026-12-15T00:00:00.000Z', 'month')).toBe('2027-01-15T00:00:00.000Z');
  });

  it('handles leap days for yearly periods', () => {
    expect(end('2028-02-29T06:00:00.000Z', 'year')).toBe('2029-02-28T06:00:00.000Z');
    expect(end('2028-02-29T06:00:00.000Z', 'year', 4)).toBe('2032-02-29T06:00:00.000Z');
    expect(end('2027-02-28T06:00:00.000Z', 'year')).toBe('2028-02-28T06:00:00.000Z');
  });

  it('adds days and weeks as exact durations in UTC', () => {
    expect(end('2026-02-27T22:00:00.000Z', 'day', 2)).toBe('2026-03-01T22:00:00.000Z');
    expect(end('2028-02-27T22:00:00.000Z', 'day', 2)).toBe('2028-02-29T22:00:00.000Z');
    expect(end('2026-12-28T00:00:00.000Z', 'week', 1)).toBe('2027-01-04T00:00:00.000Z');
  });

  it('rejects non-positive or fractional counts', () => {
    expect(() => addInterval(at('2026-01-01T00:00:00Z'), 'month', 0)).toThrow(RangeError);
    expect(() => addInterval(at('2026-01-01T00:00:00Z'), 'month', 1.5)).toThrow(RangeError);
  });
});

describe('nextPeriodEnd: periods anchored on the start, never drifting', () => {
  const start = new Date('2027-01-31T09:30:00.000Z');
  const chain = (interval: RecurringInterval, count: number, n: number) => {
    const ends: string[] = [];
    let end = addInterval(start, interval, count);
    for (let i = 0; i < n; i++) {
      end = nextPeriodEnd(start, interval, count, end);
      ends.push(end.toISOString().slice(0, 10));
    }
    return ends;
  };

  it('monthly from 31 January: the last day of short months, the 31st again after them', () => {
    expect(addInterval(start, 'month', 1).toISOString()).toBe('2027-02-28T09:30:00.000Z');
    expect(chain('month', 1, 4)).toEqual(['2027-03-31', '2027-04-30', '2027-05-31', '2027-06-30']);
    expect(chain('month', 2, 2)).toEqual(['2027-05-31', '2027-07-31']);
  });

  it('leap years: from 29 February 2028, yearly ends on 28 February until the next 29th', () => {
    const leap = new Date('2028-02-29T00:00:00.000Z');
    let end = addInterval(leap, 'year', 1);
    const ends = [end.toISOString().slice(0, 10)];
    for (let i = 0; i < 4; i++) {
      end = nextPeriodEnd(leap, 'year', 1, end);
      ends.push(end.toISOString().slice(0, 10));
    }
    expect(ends).toEqual(['2029-02-28', '2030-02-28', '2031-02-28', '2032-02-29', '2033-02-28']);
  });

  it('days and weeks step by their length; an end that is no boundary is followed by the next one', () => {
    expect(chain('week', 2, 2)).toEqual(['2027-02-28', '2027-03-14']);
    expect(nextPeriodEnd(start, 'day', 1, new Date('2027-02-10T12:00:00.000Z')).toISOString()).toBe(
      '2027-02-11T09:30:00.000Z',
    );
    // Ten years of daily periods, exactly.
    const tenYears = new Date('2037-01-31T09:30:00.000Z');
    expect(nextPeriodEnd(start, 'day', 1, tenYears).toISOString()).toBe('2037-02-01T09:30:00.000Z');
  });
});
