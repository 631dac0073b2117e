/**
 * One card per function (test/cards/): every operation of the route table, every scheduled and
 * every pipeline function has exactly one, in the file its name names, and no card names a function
 * the route table does not have. Derived from the route table and the folder, never from a list.
 */
import { describe, expect, it } from 'vitest';
import { routeRequest } from '#scripts/local/apigw.ts';
import { operations, pipelineFunctions, scheduledFunctions } from '#shared/operations.ts';
import { cardFiles, loadCardFiles } from '#test/cards/index.ts';

const functions = [...operations, ...scheduledFunctions, ...pipelineFunctions].map((fn) => fn.name as string);
const loaded = await loadCardFiles();

describe('the cards', () => {
  it('every function of the route table has exactly one card', () => {
    const names = loaded.map(({ card }) => card.name as string);
    const count = (name: string) => names.filter((n) => n === name).length;
    expect(
      functions.filter((name) => count(name) !== 1).map((name) => `${name}: ${count(name)} cards`),
    ).toEqual([]);
  });

  it('every card names a function of the route table, in the file of its name', () => {
    expect(loaded.filter(({ card }) => !functions.includes(card.name))).toEqual([]);
    expect(loaded.filter(({ file, card }) => file !== `${card.name}.ts`).map(({ file }) => file)).toEqual([]);
    expect(cardFiles()).toHaveLength(loaded.length);
  });

  it("an operation's card has every slot an operation needs; another function's, its IAM scenario", () => {
    for (const { card } of loaded) {
      expect(typeof card.iam, card.name).toBe('function');
      if (!operations.some((operation) => operation.name === card.name)) continue;
      const operationCard = card as typeof card & Record<'sample' | 'isolation' | 'dynamoWork', unknown>;
      expect(operationCard.sample, card.name).toBeDefined();
      expect(operationCard.isolation, card.name).toBeDefined();
      expect((operationCard.dynamoWork as unknown[]).length, card.name).toBeGreaterThan(0);
    }
  });

  it("each sample request fills its route's path parameters and builds its function's event", async () => {
    // Loaded here: the module builds every operation's case at import, and refuses a missing card.
    const { sampleEvent } = await import('#test/bench/samples.ts');
    for (const operation of operations) {
      const card = loaded.find((c) => c.card.name === operation.name)?.card as { sample?: never };
      const event = sampleEvent(operation, card.sample as never);
      // The API's own router sends it to this operation's function.
      expect(routeRequest(event.requestContext.http.method, event.rawPath)?.target.name, operation.name).toBe(
        operation.name,
      );
      expect(event.rawPath, operation.name).not.toContain('{');
    }
  });

  it('the DynamoDB-work case keys are unique across the cards', () => {
    const keys = loaded.flatMap(({ card }) =>
      'dynamoWork' in card ? card.dynamoWork.map((c) => c.key) : [],
    );
    expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
  });
});
