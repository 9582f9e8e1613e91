import { expect } from 'vitest';

/** The error `promise` rejects with, checked to be a `kind` (fails the test when it resolves or throws another). */
export async function rejection<E>(promise: Promise<unknown>, kind: abstract new (...args: never[]) => E): Promise<E> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(kind);
  return error as E;
}
