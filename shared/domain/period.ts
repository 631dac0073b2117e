export type RecurringInterval = 'day' | 'week' | 'month' | 'year';

const DAY_MS = 86_400_000;

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

function addMonths(start: Date, months: number): Date {
  const total = start.getUTCMonth() + months;
  const year = start.getUTCFullYear() + Math.floor(total / 12);
  const month = ((total % 12) + 12) % 12;
  const day = Math.min(start.getUTCDate(), daysInMonth(year, month));
  const end = new Date(start.getTime());
  end.setUTCFullYear(year, month, day);
  return end;
}

/**
 * End of a billing period in calendar arithmetic (UTC): a month after 31 January
 * is the last day of February, a year after 29 February is 28 February; the time
 * of day is kept.
 */
export function addInterval(start: Date, interval: RecurringInterval, count: number): Date {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`interval count must be ≥ 1, got ${count}`);
  switch (interval) {
    case 'day':
      return new Date(start.getTime() + count * DAY_MS);
    case 'week':
      return new Date(start.getTime() + count * 7 * DAY_MS);
    case 'month':
      return addMonths(start, count);
    case 'year':
      return addMonths(start, 12 * count);
  }
}

/**
 * The end of the period after the one ending at `currentEnd`, anchored on the subscription's start:
 * the n-th period ends n × count intervals after `startedAt`, so a subscription started on 31 January
 * renews on the last day of February and then on 31 March, not on the 28th ever after. A current end
 * that is no anchored boundary (written by other arithmetic) is followed by the next boundary after it.
 */
export function nextPeriodEnd(
  startedAt: Date,
  interval: RecurringInterval,
  count: number,
  currentEnd: Date,
): Date {
  // A first guess at the number of periods elapsed, then exact calendar steps from there.
  const approximateDays = { day: 1, week: 7, month: 28, year: 365 }[interval] * count;
  let periods = Math.max(
    1,
    Math.floor((currentEnd.getTime() - startedAt.getTime()) / (approximateDays * DAY_MS)) - 1,
  );
  while (periods > 1 && addInterval(startedAt, interval, count * periods) > currentEnd) periods--;
  for (; ; periods++) {
    const end = addInterval(startedAt, interval, count * periods);
    if (end.getTime() > currentEnd.getTime()) return end;
  }
}
