/**
 * Production monitoring: one dashboard and the alarms an operator acts on. Operation metrics come
 * from each request's own log line (embedded metric format, `shared/observability/telemetry.ts`),
 * so the dashboard shows what the API answered per operation, not only what Lambda and API Gateway
 * saw. The operations are read from the route table: a new operation gets its widgets and alarm.
 */

import { Aws, Duration, NestedStack } from 'aws-cdk-lib';
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
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Operation, type Table } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  BUSINESS_EVENTS,
  CLOCK_METRICS,
  DELIVERY_METRICS,
  SERVICE,
  WEBHOOK_METRICS,
} from '../shared/observability/telemetry.ts';
import { type ApiFunction, constructId } from './function.ts';
import { AGGREGATOR_ITERATOR_AGE_ALARM_SECONDS } from './usage.ts';

export interface MonitoringProps {
  stage: string;
  namespace: string;
  api: HttpApi;
  table: Table;
  /** Every function behind the HTTP API, keyed by operation name (plus the `$default` route's). */
  functions: Record<string, ApiFunction>;
  /** The functions a schedule invokes, keyed by name. */
  scheduled: Record<string, ApiFunction>;
  /** The webhook pipeline's dead-letter queues: their depth on the dashboard. */
  webhookDeadLetters: { deliveries: IQueue; relayFailures: IQueue };
  /** The meter aggregator (infra/usage.ts): its stream iterator age alarm lives here. */
  meterAggregator?: { fn: ApiFunction };
  /** Addresses the alarm topic mails (each confirms its subscription once); none: subscribe later. */
  alarmEmails?: readonly string[];
}

const PERIOD = Duration.minutes(5);
/** p99 above this for 3 of 5 periods: a slow operation, not one slow request. */
export const LATENCY_P99_ALARM_MS = 2_000;
/** Operations whose 5xx share over 5 minutes exceeds this (with some traffic) alarm. */
export const ERROR_RATE_ALARM_PERCENT = 1;
/** Periods of 5 minutes running with a clock failure before its alarm fires (one throttle heals by itself). */
export const CLOCK_FAILURE_ALARM_PERIODS = 2;
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

/**
 * The dashboard and the API's 5xx alarm live in the API's stack; the alarms per function (three or
 * four each) in a nested stack of their own, `alarmStack`, so the API's stack stays under
 * CloudFormation's 500 resources per template as operations are added. What the nested alarms read
 * of the parent (function and table names) CDK passes as the nested stack's parameters; nothing of
 * the HTTP API crosses over.
 */
export class Monitoring extends Construct {
  readonly dashboard: Dashboard;
  readonly alarmStack: NestedStack;
  readonly alarms: Alarm[] = [];
  /** Every alarm of the stack notifies this topic when it fires and when it recovers. */
  readonly alarmTopic: Topic;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.alarmTopic = this.createAlarmTopic(props);
    this.alarmStack = new NestedStack(this, 'Alarms', {
      description: `commerce-api ${props.stage}: an alarm on each function's latency, errors and throttles`,
    });
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
    const serviceMetric = (name: string) =>
      new Metric({
        namespace: props.namespace,
        metricName: name,
        dimensionsMap: { service: SERVICE },
        statistic: 'Sum',
        period: PERIOD,
        label: name,
      });
    const depth = (label: string, queue: IQueue) =>
      queue.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum', label });
    this.dashboard.addWidgets(
      graph('Webhook dead-letter queues (messages)', [
        depth('deliveries given up by the deliverer', props.webhookDeadLetters.deliveries),
        depth(
          'stream batches the relay or the meter aggregator failed',
          props.webhookDeadLetters.relayFailures,
        ),
      ]),
      graph('Webhook deliveries', [
        serviceMetric(DELIVERY_METRICS.attempts),
        serviceMetric(DELIVERY_METRICS.failures),
        ...Object.values(WEBHOOK_METRICS).map(serviceMetric),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Subscription clock: renewed, ended, failed (pushed to the next run)', [
        ...Object.values(CLOCK_METRICS).map(serviceMetric),
      ]),
    );
    this.dashboard.addWidgets(
      new TextWidget({
        markdown:
          'Metrics: namespace `' +
          props.namespace +
          "`, dimensions `service`, `operation`, `error_type`; the webhook deliverer's per batch, " +
          'dimension `service`.',
        width: 24,
        height: 2,
      }),
    );

    const alarm = (alarmId: string, description: string, metric: IMetric, threshold: number, periods = 1) => {
      const created = new Alarm(this.alarmStack, alarmId, {
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

    const countAlarm = (
      scope: Construct,
      alarmId: string,
      description: string,
      metric: IMetric,
      threshold: number,
      periods = 1,
    ) =>
      this.alarms.push(
        new Alarm(scope, alarmId, {
          alarmDescription: description,
          metric,
          threshold,
          evaluationPeriods: periods,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    countAlarm(
      this,
      'Api5xxAlarm',
      'HTTP API answered with 5xx responses',
      props.api.metricServerError({ period: PERIOD, statistic: 'Sum' }),
      5,
    );
    for (const [name, fn] of Object.entries(props.scheduled)) {
      countAlarm(
        this.alarmStack,
        `${constructId(name)}ErrorsAlarm`,
        `${name}: scheduled runs failed three times in a row (due subscriptions wait)`,
        fn.function.metricErrors({ period: PERIOD, statistic: 'Sum' }),
        1,
        3,
      );
    }
    // A subscription the clock cannot change is skipped and tried again each minute (its failure
    // isolated, the others renewed): failures in two periods running are one that does not heal.
    countAlarm(
      this.alarmStack,
      'SubscriptionClockFailuresAlarm',
      'subscription clock: changes failed in two periods of 5 minutes running (those subscriptions are not renewed; the log names them)',
      new Metric({
        namespace: props.namespace,
        metricName: CLOCK_METRICS.failures,
        dimensionsMap: { service: SERVICE },
        statistic: 'Sum',
        period: PERIOD,
      }),
      1,
      CLOCK_FAILURE_ALARM_PERIODS,
    );
    for (const [name, fn] of Object.entries({ ...props.functions, ...props.scheduled })) {
      countAlarm(
        this.alarmStack,
        `${constructId(name)}ThrottlesAlarm`,
        `${name}: Lambda throttled invocations (concurrency exhausted)`,
        fn.function.metricThrottles({ period: PERIOD, statistic: 'Sum' }),
        1,
      );
    }
    if (props.meterAggregator) {
      const { fn } = props.meterAggregator;
      alarm(
        'AggregatorIteratorAgeAlarm',
        `The meter aggregator reads usage-event stream records more than ${AGGREGATOR_ITERATOR_AGE_ALARM_SECONDS} s old (5 of 5 periods of 1 minute): customer meters lag`,
        fn.function.metric('IteratorAge', { statistic: 'Maximum', period: Duration.minutes(1) }),
        AGGREGATOR_ITERATOR_AGE_ALARM_SECONDS * 1000,
        5,
      );
    }
    this.notify(this.alarms);
  }

  /** Alarms made elsewhere in the stack (the webhook pipeline's) notify the same topic. */
  notify(alarms: readonly Alarm[]): void {
    const action = new SnsAction(this.alarmTopic);
    for (const alarm of alarms) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
  }

  /**
   * One topic for every alarm: subscribe a mailbox (`-c alarmEmail=…`), a chat or paging service's
   * endpoint, or a function. Only CloudWatch alarms of this account publish to it, over TLS.
   */
  private createAlarmTopic(props: MonitoringProps): Topic {
    const topic = new Topic(this, 'AlarmTopic', {
      topicName: `commerce-api-${props.stage}-alarms`,
      displayName: `commerce-api ${props.stage} alarms`,
      enforceSSL: true,
    });
    // The topic's policy replaces SNS's default one: CloudWatch alarms need their own allowance.
    topic.addToResourcePolicy(
      new PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        effect: Effect.ALLOW,
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
          ArnLike: {
            'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*`,
          },
        },
      }),
    );
    for (const email of props.alarmEmails ?? []) topic.addSubscription(new EmailSubscription(email));
    // Not encrypted at rest: CloudWatch alarms cannot publish to a topic under the AWS-managed SNS
    // key, and the messages are alarm states (names, thresholds, values), no customer data or secret.
    return topic;
  }
}
