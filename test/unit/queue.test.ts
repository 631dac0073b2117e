/**
 * The delivery queue's scenarios (test/support/queue-scenarios.ts) against the in-process queue
 * `npm start` uses, on an injected clock: time passes by a step, not a wait. The same list runs
 * against Amazon SQS's API (moto) in `npm run test:sqs` (queue-sqs.test.ts).
 */
import { LocalQueue } from '#shared/queue/local.ts';
import { MAX_RECEIVES, queueScenarios, VISIBILITY } from '../support/queue-scenarios.ts';

let now = Date.parse('2026-01-01T00:00:00Z');
const clock = () => now;

queueScenarios({
  name: 'in-process queue',
  makePair: async () => {
    const deadLetter = new LocalQueue({ visibilityTimeoutSeconds: 30, now: clock });
    return {
      queue: new LocalQueue({
        visibilityTimeoutSeconds: VISIBILITY,
        maxReceiveCount: MAX_RECEIVES,
        deadLetter,
        now: clock,
      }),
      deadLetter,
    };
  },
  pass: async (ms) => {
    now += ms;
  },
});
