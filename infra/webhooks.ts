/**
 * The webhook delivery pipeline: the table's stream → the relay → the delivery queue → the deliverer,
 * with a dead-letter queue for messages the deliverer keeps failing on and one for stream batches the
 * relay keeps failing on; in prod, alarms on both, on the delivery failure rate, and on the two
 * backlogs that show a stalled pipeline: the relay's stream iterator age and the delivery queue's
 * oldest message.
 */
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DELIVERY_METRICS, SERVICE } from '../shared/observability/telemetry.ts';
import { pipelineFunctions } from '../shared/operations.ts';
import { DELIVERY_QUEUE_URL_ENV } from '../shared/queue/production.ts';
import { CIRCUIT_MAX_WAIT_SECONDS } from '../shared/webhooks/circuit.ts';
import { relayStreamFilters } from '../shared/webhooks/relay.ts';
import { MAX_ATTEMPTS } from '../shared/webhooks/retry.ts';
import { ApiFunction, constructId, LOCAL_SQS_ENDPOINT_ENV, type WebhookKeySetRef } from './function.ts';

/** A batch of ten messages sent in parallel, each within send.ts's 5 s deadline, plus the table writes. */
export const DELIVERER_TIMEOUT_SECONDS = 30;
/** AWS advises a queue visibility timeout of six times the consumer's timeout. */
export const DELIVERY_VISIBILITY_SECONDS = 6 * DELIVERER_TIMEOUT_SECONDS;
/**
 * Each retry is a receive, so the redrive limit sits above the ladder's attempts: the margin absorbs
 * receives that ended in a crash or timeout. Past it a message is in the dead-letter queue.
 */
export const DELIVERY_MAX_RECEIVES = MAX_ATTEMPTS + 5;
/** Stream batches the relay fails this often (bisected each time) go to its failure queue. */
export const RELAY_RETRY_ATTEMPTS = 20;
/** Delivery failure rate (failed attempts / attempts, 15 min) above which prod alarms. */
export const DELIVERY_FAILURE_RATE_ALARM_PERCENT = 20;
/**
 * Stream records older than this when the relay gets them (its `IteratorAge`, the maximum of each
 * minute, 5 minutes in a row) mean the relay is failing or cannot keep up: events are late for
 * every tenant. It is milliseconds to a second or two when healthy.
 */
export const RELAY_ITERATOR_AGE_ALARM_SECONDS = 120;
/**
 * The delivery queue's oldest message (`ApproximateAgeOfOldestMessage`, maximum, 5 minutes in a
 * row) older than this means the deliverer is not keeping up. Messages waiting on purpose stay
 * below it: SQS leaves a message received three times or more out of this metric, and before its
 * third receive a message waits at most twice, each wait the ladder's (5 s, 30 s) or an open
 * circuit's (`CIRCUIT_MAX_WAIT_SECONDS`, 7.5 min); 5 minutes more is a backlog.
 */
export const DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS = 2 * CIRCUIT_MAX_WAIT_SECONDS + 300;

export interface WebhookPipelineProps {
  table: Table;
  /** The endpoint API's key set: the deliverer opens the endpoints' signing secrets with it. */
  webhookKeySet: WebhookKeySetRef;
  projectRoot: string;
  production: boolean;
  tracing: boolean;
  namespace: string;
  environment: Record<string, string>;
}

export class WebhookPipeline extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly relayFailures: Queue;
  readonly relay: ApiFunction;
  readonly deliverer: ApiFunction;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: WebhookPipelineProps) {
    super(scope, id);
    const queueDefaults = {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    };
    this.deadLetterQueue = new Queue(this, 'DeliveryDeadLetters', {
      ...queueDefaults,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'Deliveries', {
      ...queueDefaults,
      visibilityTimeout: Duration.seconds(DELIVERY_VISIBILITY_SECONDS),
      // The ladder spans about a day; a message outlives it with room to spare.
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: DELIVERY_MAX_RECEIVES },
    });
    this.relayFailures = new Queue(this, 'RelayFailures', {
      ...queueDefaults,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.relayFailures).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "It is a dead-letter queue: the relay's event source mapping sends it the stream batches it failed " +
        'on (on-failure destination), which CloudFormation does not declare as a redrive policy. An alarm ' +
        'watches it in prod.',
    });

    const [relayDefinition, delivererDefinition] = pipelineFunctions;
    const common = {
      table: props.table,
      webhookKeySet: props.webhookKeySet,
      projectRoot: props.projectRoot,
      production: props.production,
      tracing: props.tracing,
      environment: {
        ...props.environment,
        [DELIVERY_QUEUE_URL_ENV]: this.queue.queueUrl,
        // Inert on AWS (the SDK ignores an empty endpoint variable); lets `sam local` point the
        // functions at a local SQS API, as the DynamoDB and Secrets Manager ones do.
        [LOCAL_SQS_ENDPOINT_ENV]: '',
      },
    };
    // At the stack's level, named as the operations' functions are (`WebhookRelay/Function` has the
    // logical id `WebhookRelayFunction…`), so tools that find a function by its name find these too.
    const stack = Stack.of(this);
    this.relay = new ApiFunction(stack, constructId(relayDefinition.name), {
      ...common,
      operation: relayDefinition,
      timeout: Duration.seconds(60),
    });
    this.connectSender(this.relay);
    Validations.of(this.relay.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'The stream event source mapping needs dynamodb:ListStreams, which takes no resource-level permission ' +
        '(AWS requires Resource "*"); the stream\'s own read actions are granted on the table\'s stream ARN only.',
    });
    const { outbox, redelivery, subscription } = relayStreamFilters;
    this.relay.function.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        bisectBatchOnError: true,
        retryAttempts: RELAY_RETRY_ATTEMPTS,
        onFailure: new SqsDlq(this.relayFailures),
        filters: [
          // New outbox items: the events to relay.
          FilterCriteria.filter({
            eventName: FilterRule.isEqual(outbox.eventName),
            dynamodb: { Keys: { PK: { S: FilterRule.beginsWith(outbox.partitionKeyPrefix) } } },
          }),
          // Redeliver requests: their round's first attempt to queue.
          FilterCriteria.filter({
            eventName: FilterRule.isEqual(redelivery.eventName),
            dynamodb: {
              Keys: {
                PK: { S: FilterRule.beginsWith(redelivery.partitionKeyPrefix) },
                SK: { S: FilterRule.beginsWith(redelivery.sortKeyPrefix) },
              },
            },
          }),
          // Subscriptions created or changed: their lists' counts (shared/data/subscription-counts.ts).
          FilterCriteria.filter({
            eventName: FilterRule.or(...subscription.eventNames),
            dynamodb: {
              Keys: {
                PK: { S: FilterRule.beginsWith(subscription.partitionKeyPrefix) },
                SK: { S: FilterRule.beginsWith(subscription.sortKeyPrefix) },
              },
            },
          }),
        ],
      }),
    );

    this.deliverer = new ApiFunction(stack, constructId(delivererDefinition.name), {
      ...common,
      operation: delivererDefinition,
      timeout: Duration.seconds(DELIVERER_TIMEOUT_SECONDS),
    });
    this.deliverer.function.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        // One slow receiver cannot take every concurrent execution of the account.
        maxConcurrency: 20,
      }),
    );

    if (props.production) this.createAlarms();
  }

  /**
   * The one function that sends to the delivery queue (the relay: no API function does, Redeliver
   * included; what they queue leaves through the table's stream): `sqs:SendMessage` on this queue
   * alone (SendMessageBatch needs no other action), its URL, and the empty SQS endpoint variable
   * `sam local` can override.
   */
  private connectSender(fn: ApiFunction): void {
    fn.role.addToPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queueArn],
      }),
    );
    fn.function.addEnvironment(DELIVERY_QUEUE_URL_ENV, this.queue.queueUrl);
    fn.function.addEnvironment(LOCAL_SQS_ENDPOINT_ENV, '');
  }

  /**
   * The alarms that name no queue (the delivery failure rate, of the service's own metrics, and the
   * relay's iterator age, of its function), made in `scope`: prod's nested alarm stack
   * (infra/monitoring.ts), so that the API's stack stays under CloudFormation's 500 resources. Their
   * only reference to the API's stack is the relay's function name, a parameter as the throttle
   * alarms' are.
   */
  createNestedAlarms(scope: Construct, namespace: string): Alarm[] {
    const created: Alarm[] = [];
    const metric = (name: string) =>
      new Metric({
        namespace,
        metricName: name,
        dimensionsMap: { service: SERVICE },
        statistic: 'Sum',
        period: Duration.minutes(15),
      });
    created.push(
      new Alarm(scope, 'DeliveryFailureRateAlarm', {
        alarmDescription: `More than ${DELIVERY_FAILURE_RATE_ALARM_PERCENT} % of webhook delivery attempts failed (15 min, at least 20 attempts)`,
        metric: new MathExpression({
          expression: 'IF(a >= 20, 100 * f / a, 0)',
          usingMetrics: { a: metric(DELIVERY_METRICS.attempts), f: metric(DELIVERY_METRICS.failures) },
          period: Duration.minutes(15),
        }),
        threshold: DELIVERY_FAILURE_RATE_ALARM_PERCENT,
        evaluationPeriods: 2,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    created.push(
      new Alarm(scope, 'RelayIteratorAgeAlarm', {
        alarmDescription: `The webhook relay reads outbox stream records more than ${RELAY_ITERATOR_AGE_ALARM_SECONDS} s old (5 min in a row): it is failing or cannot keep up, and every tenant's events are late`,
        metric: this.relay.function.metric('IteratorAge', {
          statistic: 'Maximum',
          period: Duration.minutes(1),
        }),
        threshold: RELAY_ITERATOR_AGE_ALARM_SECONDS * 1000,
        evaluationPeriods: 5,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    return created;
  }

  private createAlarms(): void {
    for (const [name, queue, what] of [
      ['DeliveryDeadLettersAlarm', this.deadLetterQueue, 'webhook deliveries the deliverer kept failing on'],
      [
        'RelayFailuresAlarm',
        this.relayFailures,
        'stream batches the relay or the meter aggregator kept failing on',
      ],
    ] as const) {
      this.alarms.push(
        new Alarm(this, name, {
          alarmDescription: `Dead-letter queue holds ${what}`,
          metric: queue.metricApproximateNumberOfMessagesVisible({
            period: Duration.minutes(5),
            statistic: 'Maximum',
          }),
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    this.alarms.push(
      new Alarm(this, 'DeliveryOldestMessageAlarm', {
        alarmDescription: `The delivery queue's oldest message is more than ${DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS} s old (5 min in a row): the webhook deliverer is not keeping up`,
        metric: this.queue.metricApproximateAgeOfOldestMessage({
          statistic: 'Maximum',
          period: Duration.minutes(1),
        }),
        threshold: DELIVERY_OLDEST_MESSAGE_ALARM_SECONDS,
        evaluationPeriods: 5,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
  }
}
