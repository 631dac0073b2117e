/**
 * Which partitions one function's requests read: each request's partition keys (a BatchGetItem's
 * keys, a Query's `:pk`, a GetItem's key), recorded on the function's own client. What a check that
 * a page skips a partition reads.
 */
import type { World } from './world.ts';

export interface PartitionReads {
  /** The partition keys read since the last `reset()`, one per key or Query, in order sent. */
  partitions(): string[];
  reset(): void;
}

export function recordPartitionReads(world: World, functionName: string): PartitionReads {
  let read: string[] = [];
  world.depsFor(functionName).table.doc.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as {
        RequestItems?: Record<string, { Keys?: { PK: string }[] }>;
        ExpressionAttributeValues?: Record<string, unknown>;
        Key?: { PK: string };
      };
      for (const request of Object.values(input.RequestItems ?? {}))
        for (const key of request.Keys ?? []) read.push(key.PK);
      const pk = input.ExpressionAttributeValues?.[':pk'];
      if (typeof pk === 'string') read.push(pk);
      if (input.Key) read.push(input.Key.PK);
      return next(args);
    },
    { step: 'initialize', name: 'recordPartitionReads' },
  );
  return {
    partitions: () => [...read],
    reset: () => {
      read = [];
    },
  };
}
