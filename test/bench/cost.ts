/**
 * 6. Cost per million requests per operation, from this run's measurements: billed Lambda duration
 * estimated as the warm handler time (section 4) plus the operation's DynamoDB round trips × the
 * measured DynamoDB Local round-trip time (section 2, SDK work included), and request units from
 * the measured consumed capacity (section 2).
 */
import type { OperationWork } from './dynamo-work.ts';
import { fmt, type SectionResult } from './report.ts';
import type { WarmFigures } from './warm.ts';

/** us-east-1 list prices (the brief's figures). */
export const PRICES = {
  lambdaArmGbSecond: 0.0000133334,
  lambdaPerMillion: 0.2,
  httpApiPerMillion: 1.0,
  writeRequestUnitPerMillion: 0.625,
  readRequestUnitPerMillion: 0.125,
  memoryGb: 512 / 1024,
  /** Idle-only items. */
  dynamoStorageGbMonth: 0.25,
  logsStorageGbMonth: 0.03,
  alarmMonth: 0.1,
} as const;

const money = (value: number, digits = 2) => `$${fmt(value, digits)}`;

export function cost(work: OperationWork[], warm: WarmFigures[]): SectionResult {
  const rows: (string | number)[][] = [];
  for (const w of work) {
    if (!w.available) {
      rows.push([w.label, 'n/a', '', '', '', '', '', '', '', '']);
      continue;
    }
    const handlerMs = warm.find((f) => f.operation === w.operation)?.p50 ?? Number.NaN;
    const durationMs = handlerMs + w.roundTrips * w.roundTripMs;
    const billedMs = Math.ceil(durationMs);
    const lambda =
      1e6 * PRICES.memoryGb * (billedMs / 1000) * PRICES.lambdaArmGbSecond + PRICES.lambdaPerMillion;
    const api = PRICES.httpApiPerMillion;
    const dynamo = w.rru * PRICES.readRequestUnitPerMillion + w.wru * PRICES.writeRequestUnitPerMillion;
    const total = lambda + api + dynamo;
    rows.push([
      w.label,
      `${fmt(handlerMs, 3)} + ${w.roundTrips} × ${fmt(w.roundTripMs, 1)} = ${fmt(durationMs, 1)}`,
      billedMs,
      `${fmt(w.rru, 1)} / ${fmt(w.wru, 1)}`,
      money(lambda),
      money(api),
      money(dynamo),
      money(total),
      `${fmt(total / api, 2)}×`,
      `${fmt((100 * lambda) / total, 0)}% / ${fmt((100 * dynamo) / total, 0)}%`,
    ]);
  }
  const idle: (string | number)[][] = [
    [
      'DynamoDB table (on-demand, no PITR in preview)',
      'no requests → $0; storage of a demo-sized table (KBs) at $0.25/GB-month',
      money(0),
    ],
    [
      '4 Lambda functions (no provisioned concurrency)',
      'billed per request and GB-s only; code storage free',
      money(0),
    ],
    ['API Gateway HTTP API', 'billed per request only', money(0)],
    [
      'CloudWatch log groups (functions, access log; 1 week)',
      'no ingestion when idle; what was logged ages out in a week ($0.03/GB-month)',
      money(0),
    ],
    ['CloudWatch alarms', 'none in preview (prod: 5 × $0.10/month)', money(0)],
    ['Total, idle preview stack', 'on-demand everything, nothing provisioned', '≈ $0.00 / month'],
  ];
  return {
    id: 'cost',
    title: '6. Cost per million requests',
    method: [
      `Lambda arm64 ${PRICES.memoryGb * 1024} MB at $${PRICES.lambdaArmGbSecond}/GB-s + $${PRICES.lambdaPerMillion}/M requests; API Gateway HTTP API $${PRICES.httpApiPerMillion}/M;`,
      `DynamoDB on-demand $${PRICES.writeRequestUnitPerMillion}/M WRU, $${PRICES.readRequestUnitPerMillion}/M RRU (us-east-1 list prices, no free tier).`,
      'Assumption: billed duration ≈ warm handler p50 (section 4, our code with a zero-latency client) + round trips × the',
      'median DynamoDB Local round trip measured in section 2 (SDK marshalling, signing and HTTP included), rounded up to',
      'the next ms as Lambda bills. Real DynamoDB in-region answers in a few ms too, so the order of magnitude holds; a',
      'cold start adds its init once per container. RRU/WRU: the measured consumed capacity per request (section 2);',
      'transactions already count 2× there; failed conditional writes are charged 1 WRU. Idempotency-Key rows reuse the',
      'handler time measured without the header (the claim and completion are counted as round trips).',
    ],
    tables: [
      {
        title: 'Per operation, per million requests',
        note: 'ratio: total against the fixed API Gateway price',
        columns: [
          'operation',
          'duration ms (handler + DynamoDB)',
          'billed ms',
          'RRU / WRU',
          'Lambda',
          'API GW',
          'DynamoDB',
          'total',
          'vs API GW',
          'Lambda % / DynamoDB %',
        ],
        rows,
      },
      {
        title: 'Preview stack left idle, per month',
        columns: ['resource', 'why', 'cost'],
        rows: idle,
      },
    ],
    notes: [
      'Writes dominate: every write also pays GSI1 (clients, subscriptions) and transactions pay double; reads are eventually consistent half units.',
    ],
  };
}
