/**
 * `npx tsx test/bench/quota.ts`: what the request quota check costs (shared/http/quota.ts), side by
 * side with it off, on one warm handler (Get Product) against DynamoDB Local: median and p95 latency
 * and the read and write units per request, metered from the answers' ConsumedCapacity. Then a
 * tenant at 10× its quota (the refused requests' cost), and the hot-item model of the deployed
 * quotas (writes per counter item per second at a full quota vs DynamoDB's 1,000 WCU/s per partition).
 *
 * The "on" run uses the deployed shards and lease with limits raised 100×, so that nothing is refused
 * and the figure is the admitted request's cost.
 */
import { DEFAULT_QUOTAS, type QuotaSettings } from '#shared/domain/limits.ts';
import { QuotaKeeper, shareOf } from '#shared/http/quota.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { benchWebhooks, buildEvent } from './fixture.ts';
import { handlerFactory, lambdaContext } from './handlers.ts';
import { createLocalWorld, stopDynamoDbLocal } from './local-table.ts';

const N = Number(process.env.BENCH_QUOTA_N ?? 300);
const raised: QuotaSettings = Object.fromEntries(
  Object.entries(DEFAULT_QUOTAS).map(([name, rule]) => [name, { ...rule, limit: rule.limit * 100 }]),
) as unknown as QuotaSettings;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
};

async function main() {
  const world = await createLocalWorld('bench-quota');
  try {
    const deps: Dependencies = { table: world.table, now: () => new Date(), webhooks: benchWebhooks };
    const factory = await handlerFactory('get-product');
    const variants = {
      off: factory(deps),
      on: factory({ ...deps, quotas: new QuotaKeeper(world.table, raised) }),
    };
    const url = `/v1/products/${world.demo.free_product_id}`;
    const figures: Record<string, { ms: number[]; rru: number; wru: number; statuses: Set<number> }> = {};
    for (const name of ['off', 'on', 'off', 'on'] as const) {
      const handler = variants[name];
      // Warm-up outside the meter.
      for (let i = 0; i < 20; i++)
        await handler(buildEvent('GET', url, { token: world.demo.personal_access_token }), lambdaContext());
      world.meter.reset();
      figures[name] ??= { ms: [], rru: 0, wru: 0, statuses: new Set() };
      const figure = figures[name];
      for (let i = 0; i < N; i++) {
        const started = performance.now();
        const result = await handler(
          buildEvent('GET', url, { token: world.demo.personal_access_token }),
          lambdaContext(),
        );
        figure.ms.push(performance.now() - started);
        figure.statuses.add(result.statusCode ?? 200);
      }
      for (const call of world.meter.calls) {
        // A failed conditional write reports no capacity but is charged one unit (items < 1 KB).
        const units = call.failed ? 1 : call.units;
        if (call.kind === 'read') figure.rru += units;
        else figure.wru += units;
      }
    }
    console.log(`Quota check on one warm handler (Get Product), ${2 * N} requests per variant:`);
    console.log('| variant | p50 ms | p95 ms | RRU/request | WRU/request | statuses |');
    console.log('|---|---|---|---|---|---|');
    for (const [name, figure] of Object.entries(figures)) {
      const requests = figure.ms.length;
      console.log(
        `| ${name} | ${percentile(figure.ms, 50).toFixed(2)} | ${percentile(figure.ms, 95).toFixed(2)} | ${(figure.rru / requests).toFixed(3)} | ${(figure.wru / requests).toFixed(3)} | ${[...figure.statuses].join(',')} |`,
      );
    }
    const off = figures.off as { ms: number[] };
    const on = figures.on as { ms: number[] };
    console.log(`p50 ratio on/off: ${(percentile(on.ms, 50) / percentile(off.ms, 50)).toFixed(2)}`);

    // A tenant at 10× its quota: one instance, the deployed quotas, 10× the credential's 300, all in
    // one window: the keeper's clock is held inside a window of its own (one no earlier section
    // counted in), so that every one of the 3,000 requests meets it, however slow the machine.
    const window = DEFAULT_QUOTAS.credential.windowSeconds * 1000;
    const held = new Date((Math.floor(Date.now() / window) + 1000) * window + 1);
    const keeper = new QuotaKeeper(world.table, DEFAULT_QUOTAS, () => held);
    const limited = factory({ ...deps, quotas: keeper });
    const sent = DEFAULT_QUOTAS.credential.limit * 10;
    world.meter.reset();
    let refused = 0;
    for (let i = 0; i < sent; i++) {
      const result = await limited(
        buildEvent('GET', url, { token: world.demo.personal_access_token }),
        lambdaContext(),
      );
      if (result.statusCode === 429) refused++;
    }
    const writes = world.meter.calls.filter((call) => call.kind === 'write').length;
    console.log(
      `\nA tenant past its quota in one window: ${sent} requests, ${world.meter.calls.length} DynamoDB calls, ${writes} of them quota writes, ${refused} requests refused (a refused request after the first ones costs no write).`,
    );
  } finally {
    await world.drop();
    await stopDynamoDbLocal();
  }

  console.log('\nHot items at a full quota (deployed DEFAULT_QUOTAS), per counter item:');
  console.log(
    '| bucket | shards | share per window | writes/s per item (leases) | + refusals with 100 instances | per-partition limit |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const [name, rule] of Object.entries(DEFAULT_QUOTAS)) {
    const share = shareOf(rule, 0);
    const leases = share / Math.min(rule.lease, share) / rule.windowSeconds;
    const refusals = 100 / rule.windowSeconds;
    console.log(
      `| ${name} | ${rule.shards} | ${share} | ${leases.toFixed(1)} | ${(leases + refusals).toFixed(1)} | 1000 WCU/s |`,
    );
  }
}

await main();
