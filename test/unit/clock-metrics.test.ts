/**
 * The subscription clock's run line (`logClockRun`): its log fields, then one EMF line whose
 * `ClockFailures` the prod alarm reads (infra/monitoring.ts, test/infra/clock-alarm.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CLOCK_METRICS, type LogLine, setLineSink } from '#shared/observability/telemetry.ts';
import { logClockRun } from '#shared/services/subscription-clock.ts';

afterEach(() => setLineSink(undefined));

describe('the clock run line', () => {
  it('logs the report and emits renewed, ended and failures as metrics of the service', () => {
    const lines: LogLine[] = [];
    setLineSink((line) => lines.push(line));
    logClockRun(
      {
        renewed: 7,
        ended: 2,
        skipped: 1,
        notFree: ['a'],
        failures: 3,
        failed: ['x', 'y', 'z'],
        batches: 5,
        complete: true,
      },
      12.4,
    );
    expect(lines[0]).toMatchObject({ message: 'subscription clock', failures: 3, failed: ['x', 'y', 'z'] });
    const metrics = lines.find((line) => '_aws' in line);
    expect(metrics).toMatchObject({
      service: 'commerce-api',
      [CLOCK_METRICS.renewed]: 7,
      [CLOCK_METRICS.ended]: 2,
      [CLOCK_METRICS.failures]: 3,
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: 'CommerceApi/local',
            Dimensions: [['service']],
            Metrics: Object.values(CLOCK_METRICS).map((Name) => ({ Name, Unit: 'Count' })),
          },
        ],
      },
    });
  });
});
