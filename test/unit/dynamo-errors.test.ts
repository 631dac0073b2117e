/**
 * SDK failures that must never reach a client as a bare 500: an item collection at its 10 GB limit
 * (a write alone, or one item of a transaction) is the contract's 503, with a line for the operator.
 */
import { describe, expect, it } from 'vitest';
import { run } from '#shared/data/dynamo.ts';
import { ServiceUnavailable } from '#shared/domain/errors.ts';

const sdkError = (name: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name, $metadata: { httpStatusCode: 400 }, ...extra });

describe('run: ItemCollectionSizeLimitExceeded', () => {
  it('a single write refused for it is a 503, not the raw error', async () => {
    await expect(
      run(() => Promise.reject(sdkError('ItemCollectionSizeLimitExceededException'))),
    ).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('a transaction cancelled for it is a 503', async () => {
    const cancelled = sdkError('TransactionCanceledException', {
      CancellationReasons: [{ Code: 'None' }, { Code: 'ItemCollectionSizeLimitExceeded' }],
    });
    await expect(run(() => Promise.reject(cancelled))).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('an unknown refusal stays what it is (an operator fault is not hidden)', async () => {
    const unknown = sdkError('ValidationException');
    await expect(run(() => Promise.reject(unknown))).rejects.toBe(unknown);
  });
});
