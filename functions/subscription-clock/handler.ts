import type { Context, ScheduledEvent } from 'aws-lambda';
import { type Dependencies, productionDependencies } from '#shared/runtime.ts';
import { type ClockReport, logClockRun, runSubscriptionClock } from '#shared/services/subscription-clock.ts';

/** Time kept in hand when deciding on another batch: a batch takes well under this. */
const SAFETY_MS = 5_000;

/** Invoked by the stack's schedule (an EventBridge rule, every minute) and by `npm start`'s timer. */
export const createHandler =
  (deps: Dependencies) =>
  async (
    _event: ScheduledEvent | Record<string, never>,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ) => {
    const started = performance.now();
    const report: ClockReport = await runSubscriptionClock(deps, {
      timeLeft: () => (context ? context.getRemainingTimeInMillis() > SAFETY_MS : true),
    });
    logClockRun(report, performance.now() - started);
    return report;
  };

export const handler = createHandler(productionDependencies());
