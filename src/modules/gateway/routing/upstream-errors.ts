import { AppError } from '../../../platform/http/errors.js';
import { UpstreamError } from '../providers/types.js';

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
      return new AppError(400, 'BAD_REQUEST', `The provider refused the model "${modelSlug}": ${error.message} Choose another model.`, {
        upstream,
        model: modelSlug,
      });
    case 'bad_request':
      return new AppError(400, 'BAD_REQUEST', `The provider rejected the request: ${error.message}`, { upstream, model: modelSlug });
    case 'model_not_found':
      return new AppError(
        503,
        'MODEL_UNAVAILABLE',
        `The model "${modelSlug}" cannot be used right now: its provider no longer serves it. Choose a different model from GET /v1/models.`,
        {
          upstream,
          model: modelSlug,
        },
      );
    default:
      return new AppError(503, 'PROVIDER_UNAVAILABLE', `The provider failed: ${error.message} Retry with backoff, or choose another model.`, {
        upstream,
        accountsTried: 1,
        accountsOverBudget: 0,
      });
  }
}

/** The `error` event of a stream: its code and message, and the wallet tokens the stream was charged (null: not yet known). */
export interface StreamErrorEvent {
  type: 'error';
  error: { code: string; message: string; chargedTokens?: number | null; chargeAtMostTokens?: number };
}

const chargeSentence = (chargedTokens: number) =>
  chargedTokens > 0 ? `The text delivered so far was charged: ${chargedTokens} tokens.` : 'Nothing was charged.';

/**
 * The `error` event that ends a stream which broke after it started; with `chargedTokens` (what its settlement charged
 * for the part delivered, 0 when it was refunded) the message says it too.
 */
export function streamErrorEvent(err: unknown, chargedTokens?: number): StreamErrorEvent {
  const error = err instanceof UpstreamError ? err : null;
  const charge = chargedTokens === undefined ? {} : { chargedTokens };
  const charged = chargedTokens === undefined ? '' : ` ${chargeSentence(chargedTokens)}`;
  if (error?.kind === 'timeout') {
    return {
      type: 'error',
      error: {
        code: 'PROVIDER_UNAVAILABLE',
        message: `The provider stopped sending the answer (${error.message}).${charged} Retry for a complete answer.`,
        ...charge,
      },
    };
  }
  if (error?.kind === 'bad_request' || error?.kind === 'model_refused') {
    return { type: 'error', error: { code: 'BAD_REQUEST', message: `The provider stopped the answer: ${error.message}${charged}`, ...charge } };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    type: 'error',
    error: {
      code: 'PROVIDER_UNAVAILABLE',
      message: `The provider failed in the middle of the answer (${message}).${charged} Retry for a complete answer.`,
      ...charge,
    },
  };
}

/**
 * The `error` event of a stream whose charge could not be written (the database was away): the answer is cut, and
 * its reservation is charged when it is closed, on the progress last recorded on it: at most `atMostTokens`.
 */
export function chargePendingEvent(atMostTokens: number): StreamErrorEvent {
  const charge =
    atMostTokens > 0
      ? `The text delivered is charged when the service reaches its database again: at most ${atMostTokens} tokens (GET /v1/usage shows the charge).`
      : 'Nothing is charged for it.';
  return {
    type: 'error',
    error: {
      code: 'SERVICE_UNAVAILABLE',
      message: `The answer was cut: the service lost its database while charging it. ${charge} Retry for a complete answer.`,
      chargedTokens: null,
      chargeAtMostTokens: atMostTokens,
    },
  };
}
