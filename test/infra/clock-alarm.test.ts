/**
 * The subscription clock's failure alarm (infra/monitoring.ts): the clock isolates a subscription it
 * cannot change and goes on, so its function never fails for it; only `ClockFailures`, the metric of
 * its run line (shared/observability/telemetry.ts `emitClockRun`), tells. Prod alarms on it, in the
 * nested alarm stack, and notifies the alarm topic; preview has no alarms.
 */
import { describe, expect, it } from 'vitest';
import { CLOCK_FAILURE_ALARM_PERIODS } from '../../infra/monitoring.ts';
import { CLOCK_METRICS, SERVICE } from '../../shared/observability/telemetry.ts';
import { sharedNestedTemplate, sharedStage } from '../support/stages.ts';

const prod = sharedStage('prod');
const alarms = sharedNestedTemplate(prod.model, 'alarms');

describe('the subscription clock failure alarm', () => {
  it("alarms when the clock's run lines count failed changes in consecutive periods, and notifies the topic", () => {
    const found = Object.values(alarms.findResources('AWS::CloudWatch::Alarm')).filter(
      (alarm) => alarm.Properties.MetricName === CLOCK_METRICS.failures,
    );
    expect(found).toHaveLength(1);
    const [alarm] = found;
    expect(alarm?.Properties).toMatchObject({
      Namespace: 'CommerceApi/prod',
      Dimensions: [{ Name: 'service', Value: SERVICE }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: CLOCK_FAILURE_ALARM_PERIODS,
      TreatMissingData: 'notBreaching',
    });
    // Fires and recovers through the alarm topic (its ARN a parameter of the nested stack; which
    // one, test/infra/stack.test.ts checks for every alarm).
    expect(alarm?.Properties.AlarmActions).toEqual([{ Ref: expect.any(String) }]);
    expect(alarm?.Properties.OKActions).toEqual(alarm?.Properties.AlarmActions);
  });

  it('the dashboard graphs what the clock renewed, ended and failed', () => {
    const [dashboard] = Object.values(prod.template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);
    for (const name of Object.values(CLOCK_METRICS)) expect(body).toContain(name);
  });
});
