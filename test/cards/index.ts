/**
 * The cards, found by reading this folder: every `<function-name>.ts` here but this file and
 * `card.ts` is one function's card (its default export). Works under vitest and under tsx (the
 * bench): plain `readdirSync` and dynamic `import()`.
 *
 * `test/unit/cards.test.ts` requires exactly one card per function of the route table (operations,
 * scheduled and pipeline functions), each in the file its name names.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type OperationName, operations } from '#shared/operations.ts';
import type { Card, FunctionName, OperationCard } from './card.ts';

export type { Card, FunctionName, OperationCard, Sample } from './card.ts';

const folder = dirname(fileURLToPath(import.meta.url));
const NOT_CARDS = new Set(['index.ts', 'card.ts']);

/** The card files of this folder, by file name. */
export const cardFiles = (): string[] =>
  readdirSync(folder)
    .filter((file) => file.endsWith('.ts') && !NOT_CARDS.has(file) && !file.endsWith('.test.ts'))
    .sort();

export interface LoadedCard {
  file: string;
  card: Card;
}

/** Every card of the folder, with its file (no check: the unit test checks). */
export async function loadCardFiles(): Promise<LoadedCard[]> {
  return Promise.all(
    cardFiles().map(async (file) => {
      const module = (await import(pathToFileURL(join(folder, file)).href)) as { default?: Card };
      if (!module.default) throw new Error(`test/cards/${file} has no default export (defineCard)`);
      return { file, card: module.default };
    }),
  );
}

let loaded: Promise<Map<string, Card>> | undefined;

/** The cards by function name; a name with two cards is refused here too. */
export function loadCards(): Promise<Map<string, Card>> {
  loaded ??= loadCardFiles().then((files) => {
    const byName = new Map<string, Card>();
    for (const { file, card } of files) {
      if (byName.has(card.name)) throw new Error(`two cards for ${card.name} (one in test/cards/${file})`);
      byName.set(card.name, card);
    }
    return byName;
  });
  return loaded;
}

/** A function's card; throws when it has none. */
export async function cardOf<N extends FunctionName>(name: N): Promise<Card<N>> {
  const card = (await loadCards()).get(name);
  if (!card) throw new Error(`no card for ${name}: add test/cards/${name}.ts`);
  return card as Card<N>;
}

/** Every operation's card, in route-table order. */
export async function operationCards(): Promise<OperationCard[]> {
  const cards = await loadCards();
  return operations.map((operation) => {
    const card = cards.get(operation.name as OperationName);
    if (!card) throw new Error(`no card for ${operation.name}: add test/cards/${operation.name}.ts`);
    return card as OperationCard;
  });
}
