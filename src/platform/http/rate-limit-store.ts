import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Metrics } from '../metrics/metrics.js';

type Counted = { current: number; ttl: number };
type Callback = (error: Error | null, result?: Counted) => void;

/** A Redis that has not answered within this long is treated as away for that request (it is counted here). */
const REDIS_ANSWER_MS = 250;
/** Local counters kept at most; past it the expired ones go, then the oldest. */
const LOCAL_KEYS_MAX = 10_000;

/** One fixed window per key: INCR, and the window's expiry set by its first hit. */
const INCREMENT_SCRIPT = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {current, redis.call('PTTL', KEYS[1])}`;

/** Fixed-window counters in this process: the fallback while Redis is away. */
function localCounters() {
  const windows = new Map<string, { count: number; endsAt: number }>();
  const prune = (now: number) => {
    for (const [key, window] of windows) if (window.endsAt <= now) windows.delete(key);
    for (const key of windows.keys()) {
      if (windows.size < LOCAL_KEYS_MAX) break;
      windows.delete(key);
    }
  };
  return (key: string, windowMs: number): Counted => {
    const now = Date.now();
    let window = windows.get(key);
    if (!window || window.endsAt <= now) {
      if (windows.size >= LOCAL_KEYS_MAX) prune(now);
      window = { count: 0, endsAt: now + windowMs };
      windows.set(key, window);
    }
    window.count++;
    return { current: window.count, ttl: window.endsAt - now };
  };
}

/**
 * The store of `@fastify/rate-limit` (its `store` option) when Redis is configured: counters in Redis, shared by the
 * instances; while Redis does not answer, counters in this process, so every limit keeps applying (per instance)
 * instead of none. The outage is logged once when it starts and once when it ends, and shown by
 * `storefront_rate_limit_redis_up` (0 while limits are counted locally) and `storefront_rate_limit_local_counts_total`.
 */
export function redisWithLocalFallback(redis: Redis, options: { nameSpace: string; logger: FastifyBaseLogger; metrics: Metrics }) {
  const local = localCounters();
  // Defined once: ioredis then sends the script's SHA (EVALSHA) instead of its text with every counted request.
  const commandName = 'storefrontRateLimitIncrement';
  if (!(commandName in redis)) redis.defineCommand(commandName, { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
  const increment = (redis as unknown as Record<string, (key: string, windowMs: number) => Promise<[number, number]>>)[commandName]!.bind(redis);
  const up = options.metrics.gauge({
    name: 'storefront_rate_limit_redis_up',
    help: 'Whether the rate-limit counters are shared in Redis (1) or counted per instance because Redis does not answer (0)',
  });
  const localCounts = options.metrics.counter({
    name: 'storefront_rate_limit_local_counts_total',
    help: 'Requests counted by this instance alone because Redis did not answer',
  });
  up.set(1);
  let away = false;

  const redisAway = (err: unknown) => {
    localCounts.inc();
    if (away) return;
    away = true;
    up.set(0);
    options.logger.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'Redis does not answer: rate limits are counted by each instance alone until it does',
    );
  };
  const redisBack = () => {
    if (!away) return;
    away = false;
    up.set(1);
    options.logger.info('Redis answers again: rate limits are shared by the instances again');
  };

  async function countInRedis(key: string, windowMs: number): Promise<Counted> {
    if (redis.status !== 'ready') throw new Error(`Redis connection is ${redis.status}`);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${REDIS_ANSWER_MS} ms`)), REDIS_ANSWER_MS);
    });
    try {
      const [current, ttl] = await Promise.race([increment(`${options.nameSpace}${key}`, windowMs), late]);
      return { current, ttl: ttl > 0 ? ttl : windowMs };
    } finally {
      clearTimeout(timer);
    }
  }

  // `@fastify/rate-limit` builds its store from the class it is given; every instance shares these counters (a limiter
  // made with `createRateLimit` names its keys apart through its key generator).
  return class RedisWithLocalFallback {
    incr(key: string, callback: Callback, timeWindow: number): void {
      countInRedis(key, timeWindow).then(
        (counted) => {
          redisBack();
          callback(null, counted);
        },
        (err: unknown) => {
          redisAway(err);
          callback(null, local(key, timeWindow));
        },
      );
    }

    child(): RedisWithLocalFallback {
      return this;
    }
  };
}
