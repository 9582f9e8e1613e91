/** The refresh-token cookie that the sign-in routes (password and identity provider) set and clear. */
export const REFRESH_COOKIE = 'rt';
export const COOKIE_PATH = '/v1/auth';
