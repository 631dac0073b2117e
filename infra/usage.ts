/**
 * The meter aggregator (issue 28): the table's stream, usage events only, folded into customer
 * meters by a function of its own (never the webhook relay: ingest volume must not delay webhooks).
 * Its event source mapping takes `INSERT`s of `UEVENT#` keys (`aggregatorStreamFilter`, the filter
 * the local poller applies too), bisects a failing batch, retries it, and sends a batch it keeps
 * failing on to a dead-letter queue: the relay's stream failure queue, shared (its alarm and its
 * dashboard graph watch both; Lambda's on-failure record names the function, the shard and the
 * sequence range). A queue of its own would cost two resources (the queue and its SSL-only policy)
 * and an alarm a third, and the API's stack is at CloudFormation's 500 resources per template. A one-minute tumbling window: it is what gives the
 * function the stream shard id its aggregates record their applied sequences by
 * (`shared/services/meter-aggregation.ts`); no state is kept in it. In prod, an alarm on its stream
 * iterator age, made by infra/monitoring.ts in its nested alarm stack (for the same reason).
 */
import { Duration, Stack, Validations } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { pipelineFunctions } from '../shared/operations.ts';
import { aggregatorStreamFilter } from '../shared/services/meter-aggregation.ts';
import { ApiFunction, constructId } from './function.ts';

/** Stream batches the aggregator fails this often (bisected each time) go to its failure queue. */
export const AGGREGATOR_RETRY_ATTEMPTS = 20;
/** Records per batch: more records of one customer meter per batch, fewer aggregate writes per event. */
export const AGGREGATOR_BATCH_SIZE = 1000;
/** The tumbling window (seconds) that makes Lambda pass the shard id. */
export const AGGREGATOR_WINDOW_SECONDS = 60;
export const AGGREGATOR_TIMEOUT_SECONDS = 60;
/** Stream records older than this when the aggregator gets them (5 min in a row): customer meters lag. */
export const AGGREGATOR_ITERATOR_AGE_ALARM_SECONDS = 60;

export interface MeterAggregationProps {
  table: Table;
  projectRoot: string;
  production: boolean;
  tracing: boolean;
  environment: Record<string, string>;
  /** Where stream batches it keeps failing on go (the webhook relay's failure queue). */
  failures: IQueue;
}

export class MeterAggregation extends Construct {
  readonly aggregator: ApiFunction;
  /** The stream failure queue it shares with the relay (see above). */
  readonly failures: IQueue;

  constructor(scope: Construct, id: string, props: MeterAggregationProps) {
    super(scope, id);
    this.failures = props.failures;
    const definition = pipelineFunctions.find((fn) => fn.name === 'meter-aggregator');
    if (!definition) throw new Error('no meter-aggregator function');
    this.aggregator = new ApiFunction(Stack.of(this), constructId(definition.name), {
      table: props.table,
      projectRoot: props.projectRoot,
      production: props.production,
      tracing: props.tracing,
      environment: props.environment,
      operation: definition,
      timeout: Duration.seconds(AGGREGATOR_TIMEOUT_SECONDS),
    });
    Validations.of(this.aggregator.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'The stream event source mapping needs dynamodb:ListStreams, which takes no resource-level permission ' +
        '(AWS requires Resource "*"); the stream\'s own read actions are granted on the table\'s stream ARN only.',
    });
    this.aggregator.function.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: AGGREGATOR_BATCH_SIZE,
        bisectBatchOnError: true,
        retryAttempts: AGGREGATOR_RETRY_ATTEMPTS,
        onFailure: new SqsDlq(this.failures),
        tumblingWindow: Duration.seconds(AGGREGATOR_WINDOW_SECONDS),
        filters: [
          FilterCriteria.filter({
            eventName: FilterRule.isEqual(aggregatorStreamFilter.eventName),
            dynamodb: {
              Keys: { PK: { S: FilterRule.beginsWith(aggregatorStreamFilter.partitionKeyPrefix) } },
            },
          }),
        ],
      }),
    );
  }
}
