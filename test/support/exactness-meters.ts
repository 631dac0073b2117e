/**
 * The exactness property's six meters (test/support/exactness.ts), one per aggregation, with
 * filters of several shapes; the scale model's aggregator case folds into the same six. Plain data:
 * no test runner import, so a script can read it too.
 */
import type { MeterAggregation, MeterFilter } from '#shared/domain/meter.ts';

const apiCall: MeterFilter = {
  conjunction: 'and',
  clauses: [{ property: 'name', operator: 'eq', value: 'api.call' }],
};
/** The six meters, one per aggregation, with filters of several shapes. */
export const EXACTNESS_METERS: { name: string; filter: MeterFilter; aggregation: MeterAggregation }[] = [
  { name: 'calls', filter: apiCall, aggregation: { func: 'count' } },
  {
    name: 'tokens',
    filter: {
      conjunction: 'or',
      clauses: [apiCall, { property: 'name', operator: 'like', value: 'batch' }],
    },
    aggregation: { func: 'sum', property: 'tokens' },
  },
  { name: 'slowest', filter: apiCall, aggregation: { func: 'max', property: 'latency' } },
  { name: 'fastest', filter: apiCall, aggregation: { func: 'min', property: 'latency' } },
  {
    name: 'mean tokens',
    filter: { conjunction: 'and', clauses: [{ property: 'tokens', operator: 'gte', value: 0 }] },
    aggregation: { func: 'avg', property: 'tokens' },
  },
  {
    name: 'models',
    filter: { conjunction: 'and', clauses: [{ property: 'region', operator: 'ne', value: 'eu' }] },
    aggregation: { func: 'unique', property: 'model' },
  },
];
