import type { FastifyRequest } from 'fastify';

const SECRET_QUERY_KEYS = /([?&](?:token|code|state|key|signature|sig|access_token)=)[^&#]*/gi;

/** The request URL as logs may show it: single-use tokens in query strings are masked. */
export const redactUrl = (url: string): string => url.replace(SECRET_QUERY_KEYS, '$1[redacted]');

export const loggerOptions = (level: string) => ({
  level,
  redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
  serializers: {
    req: (request: FastifyRequest) => ({
      method: request.method,
      url: redactUrl(request.url),
      host: request.host,
      remoteAddress: request.ip,
    }),
  },
});
