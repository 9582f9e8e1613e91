/** The one error type of the service; the error handler renders it as `{ error: { code, message, details } }`. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details: unknown = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string, details: unknown = null) => new AppError(400, 'BAD_REQUEST', message, details);
export const unauthorized = (message = 'You need to sign in to do this.') => new AppError(401, 'UNAUTHORIZED', message);
export const forbidden = (message = 'You are not allowed to do this.', details: unknown = null) => new AppError(403, 'FORBIDDEN', message, details);
export const notFound = (message = 'Not found.') => new AppError(404, 'NOT_FOUND', message);
export const conflict = (message: string, details: unknown = null) => new AppError(409, 'CONFLICT', message, details);
