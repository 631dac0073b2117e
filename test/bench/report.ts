/**
 * Statistics and reporting: every figure printed with its ratio and a PASS/MISS verdict, and
 * collected for test/bench/RESULTS.md.
 */

export const median = (values: readonly number[]) => percentile(values, 50);

/** Nearest-rank percentile. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

export type Verdict = 'PASS' | 'MISS' | 'INFO';

export const verdict = (ok: boolean): Verdict => (ok ? 'PASS' : 'MISS');

export interface Table {
  title: string;
  note?: string;
  columns: string[];
  rows: (string | number)[][];
}

export interface SectionResult {
  id: string;
  title: string;
  /** How it was measured, printed above the tables. */
  method: string[];
  tables: Table[];
  /** Findings in prose (misses explained, assumptions). */
  notes: string[];
}

export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export const ratio = (value: number, base: number) => `${fmt(value / base, 2)}×`;

function widths(table: Table): number[] {
  return table.columns.map((column, i) =>
    Math.max(column.length, ...table.rows.map((row) => String(row[i] ?? '').length)),
  );
}

export function printTable(table: Table): void {
  const w = widths(table);
  const line = (cells: (string | number)[]) =>
    cells.map((cell, i) => String(cell).padEnd(w[i] as number)).join('  ');
  console.log(`\n  ${table.title}`);
  if (table.note) console.log(`  (${table.note})`);
  console.log(`  ${line(table.columns)}`);
  console.log(`  ${w.map((n) => '-'.repeat(n)).join('  ')}`);
  for (const row of table.rows) console.log(`  ${line(row)}`);
}

export function printSection(result: SectionResult): void {
  console.log(`\n== ${result.title} ==`);
  for (const line of result.method) console.log(`  ${line}`);
  for (const table of result.tables) printTable(table);
  for (const note of result.notes) console.log(`  * ${note}`);
}

export function markdownTable(table: Table): string {
  const cellText = (cell: string | number) => String(cell).replace(/\|/g, '\\|');
  return [
    `**${table.title}**${table.note ? ` (${table.note})` : ''}`,
    '',
    `| ${table.columns.map(cellText).join(' | ')} |`,
    `|${table.columns.map(() => '---').join('|')}|`,
    ...table.rows.map((row) => `| ${row.map(cellText).join(' | ')} |`),
  ].join('\n');
}

export function markdownSection(result: SectionResult): string {
  return [
    `### ${result.title}`,
    '',
    ...result.method.map((line) => `${line}`),
    '',
    ...result.tables.flatMap((table) => [markdownTable(table), '']),
    ...result.notes.map((note) => `- ${note}`),
    '',
  ].join('\n');
}

/** All PASS/MISS cells of a section's tables (a column named "verdict"). */
export function verdicts(result: SectionResult): Verdict[] {
  const found: Verdict[] = [];
  for (const table of result.tables) {
    const column = table.columns.findIndex((c) => c.toLowerCase() === 'verdict');
    if (column < 0) continue;
    for (const row of table.rows) {
      const cell = String(row[column] ?? '');
      if (cell === 'PASS' || cell === 'MISS') found.push(cell);
    }
  }
  return found;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
