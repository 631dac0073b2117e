/**
 * Production monitoring: one dashboard and the alarms an operator acts on. Operation metrics come
 * from each request's own log line (embedded metric format, `shared/observability/telemetry.ts`),
 * so the dashboard shows what the API answered per operation, not only what Lambda and API Gateway
 * saw. The operations are read from the route table: a new operation gets its widgets and alarm.
 */

import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { Operation, type Table } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { BUSINESS_EVENTS, SERVICE } from '../shared/observability/telemetry.ts';
import type { ApiFunction } from './function.ts';

export interface MonitoringProps {
  stage: string;
  namespace: string;
  api: HttpApi;
  table: Table;
  /** Every function, keyed by operation name (plus the `$default` route's). */
  functions: Record<string, ApiFunction>;
}

const PERIOD = Duration.minutes(5);
/** p99 above this for 3 of 5 periods: a slow operation, not one slow request. */
export const LATENCY_P99_ALARM_MS = 2_000;
/** Operations whose 5xx share over 5 minutes exceeds this (with some traffic) alarm. */
export const ERROR_RATE_ALARM_PERCENT = 1;
/** DynamoDB operations whose throttles the table alarm counts. */
const TABLE_OPERATIONS = [
  Operation.GET_ITEM,
  Operation.BATCH_GET_ITEM,
  Operation.QUERY,
  Operation.PUT_ITEM,
  Operation.UPDATE_ITEM,
  Operation.DELETE_ITEM,
  Operation.TRANSACT_WRITE_ITEMS,
];

export class Monitoring extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const operationNames = Object.keys(props.functions).sort();
    const operationMetric = (name: string, operation: string, statistic: string) =>
      new Metric({
        namespace: props.namespace,
        metricName: name,
        dimensionsMap: { service: SERVICE, operation },
        statistic,
        period: PERIOD,
        label: operation,
      });

    const latency = operationNames.map((operation) => operationMetric('Latency', operation, 'p99'));
    const errorRates = operationNames.map((operation, index) => {
      const requests = operationMetric('Requests', operation, 'Sum');
      const errors = operationMetric('Errors5xx', operation, 'Sum');
      return new MathExpression({
        expression: `IF(r${index} > 0, 100 * e${index} / r${index}, 0)`,
        usingMetrics: { [`r${index}`]: requests, [`e${index}`]: errors },
        label: operation,
        period: PERIOD,
      });
    });
    const clientErrors = operationNames.map((operation) => operationMetric('Errors4xx', operation, 'Sum'));
    const throttles = Object.entries(props.functions).map(([name, fn]) =>
      fn.function.metricThrottles({ period: PERIOD, statistic: 'Sum', label: name }),
    );
    const tableThrottles = props.table.metricThrottledRequestsForOperations({
      operations: TABLE_OPERATIONS,
      period: PERIOD,
      statistic: 'Sum',
    });
    const business = BUSINESS_EVENTS.map(
      (name) =>
        new Metric({
          namespace: props.namespace,
          metricName: name,
          dimensionsMap: { service: SERVICE },
          statistic: 'Sum',
          period: PERIOD,
          label: name,
        }),
    );

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `commerce-api-${props.stage}`,
      defaultInterval: Duration.hours(3),
    });
    const graph = (title: string, left: IMetric[], unit = '') =>
      new GraphWidget({ title, left, width: 12, height: 6, leftYAxis: { label: unit, showUnits: false } });
    this.dashboard.addWidgets(
      graph('Latency p99 per operation', latency, 'ms'),
      graph('5xx rate per operation', errorRates, '%'),
    );
    this.dashboard.addWidgets(
      graph('4xx answers per operation', clientErrors),
      graph('API Gateway: requests, 4xx, 5xx', [
        props.api.metricCount({ period: PERIOD }),
        props.api.metricClientError({ period: PERIOD }),
        props.api.metricServerError({ period: PERIOD }),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Lambda throttles per function', throttles),
      graph('DynamoDB consumed capacity', [
        props.table.metricConsumedReadCapacityUnits({ period: PERIOD, statistic: 'Sum' }),
        props.table.metricConsumedWriteCapacityUnits({ period: PERIOD, statistic: 'Sum' }),
      ]),
    );
    this.dashboard.addWidgets(
      graph('DynamoDB throttled requests', [tableThrottles]),
      graph('Business events', business),
    );
    this.dashboard.addWidgets(
      new TextWidget({
        markdown:
          '**Webhook deliveries** (dead-letter queue depth, deliveries succeeded and failed) join this ' +
          'dashboard with the delivery pipeline. Metrics: namespace `' +
          props.namespace +
          '`, dimensions `service`, `operation`, `error_type`.',
        width: 24,
        height: 2,
      }),
    );

    const alarm = (alarmId: string, description: string, metric: IMetric, threshold: number, periods = 1) => {
      const created = new Alarm(this, alarmId, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods: periods === 1 ? 1 : 5,
        datapointsToAlarm: periods,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      this.alarms.push(created);
      return created;
    };
    operationNames.forEach((operation, index) => {
      alarm(
        `${operation}LatencyAlarm`,
        `${operation}: p99 latency above ${LATENCY_P99_ALARM_MS} ms in 3 of 5 periods of 5 minutes`,
        latency[index] as IMetric,
        LATENCY_P99_ALARM_MS,
        3,
      );
      alarm(
        `${operation}ErrorRateAlarm`,
        `${operation}: more than ${ERROR_RATE_ALARM_PERCENT}% of answers were 5xx over 5 minutes`,
        errorRates[index] as IMetric,
        ERROR_RATE_ALARM_PERCENT,
      );
    });
    alarm('TableThrottlesAlarm', 'DynamoDB throttled requests on the table', tableThrottles, 0);
  }
}
