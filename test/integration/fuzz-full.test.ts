/**
 * The long in-process fuzz run (`npm run test:fuzz`): the smoke's suite (test/support/fuzz-suite.ts)
 * with FUZZ_RUNS cases per operation, 1000 unless set, each operation in a table of its own that is
 * deleted after it. A failure prints its seed; FUZZ_SEED=<seed> replays it. The generator checks and
 * pinned shapes run in the smoke (test/integration/fuzz.test.ts).
 */
import { defineFuzzSuite } from '../support/fuzz-suite.ts';

defineFuzzSuite({ defaultRuns: 1000, file: 'test/integration/fuzz-full.test.ts' });
