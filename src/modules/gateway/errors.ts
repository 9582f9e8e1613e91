import { AppError } from '../../platform/http/errors.js';
import { UpstreamError } from './providers/types.js';

/**
 * Turns what went wrong upstream into the spec's answer. Account failures never reach here as UpstreamErrors:
 * the pool fails over and answers 503 PROVIDER_UNAVAILABLE itself once every account failed.
 */
export function upstreamToAppError(err: unknown, modelSlug: string): AppError {
  if (err instanceof AppError) return err;
  const error = err instanceof UpstreamError ? err : new UpstreamError('server', err instanceof Error ? err.message : String(err));
  const upstream = error.toDetails();
  switch (error.kind) {
    case 'model_refused':
      return new AppError(400, 'BAD_REQUEST', `The provider refused the model "${modelSlug}": ${error.message} Choose another model.`, { upstream, model: modelSlug });
    case 'bad_request':
      return new AppError(400, 'BAD_REQUEST', `The provider rejected the request: ${error.message}`, { upstream, model: modelSlug });
    case 'model_not_found':
      return new AppError(503, 'MODEL_UNAVAILABLE', `The model "${modelSlug}" cannot be used right now: its provider no longer serves it. Choose a different model from GET /v1/models.`, {
        upstream,
        model: modelSlug,
      });
    default:
      return new AppError(503, 'PROVIDER_UNAVAILABLE', `The provider failed: ${error.message} Retry with backoff, or choose another model.`, {
        upstream,
        accountsTried: 1,
        accountsOverBudget: 0,
      });
  }
}

/** The `error` event that ends a stream which broke after it started. */
export function streamErrorEvent(err: unknown): { type: 'error'; error: { code: string; message: string } } {
  const error = err instanceof UpstreamError ? err : null;
  if (error?.kind === 'timeout') {
    return { type: 'error', error: { code: 'PROVIDER_UNAVAILABLE', message: `The provider stopped sending the answer (${error.message}). The text received so far was billed; retry for a complete answer.` } };
  }
  if (error?.kind === 'bad_request' || error?.kind === 'model_refused') {
    return { type: 'error', error: { code: 'BAD_REQUEST', message: `The provider stopped the answer: ${error.message}` } };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    type: 'error',
    error: { code: 'PROVIDER_UNAVAILABLE', message: `The provider failed in the middle of the answer (${message}). The text received so far was billed; retry for a complete answer.` },
  };
}
