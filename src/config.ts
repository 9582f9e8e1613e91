import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { CHANNEL_SETTINGS, type ChannelSlug } from './modules/payments/gateways/settings.js';
import type { S3Settings } from './platform/storage/s3-storage.js';
import { tracingSettingsFrom, type TracingSettings } from './platform/telemetry/settings.js';

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  redisUrl: string | null;
  publicBaseUrl: string;
  frontendUrl: string;
  /** Empty in scaled mode without JWT_SECRET until the platform reads the key shared through the database. */
  jwtSecret: string;
  /**
   * Encrypts stored upstream credentials (AES-256-GCM): SECRETS_ENCRYPTION_KEY, or a key generated once (into DATA_DIR
   * in embedded mode, into the database for every instance in scaled mode; empty here until the platform reads it).
   */
  secretsEncryptionKey: string;
  smtpUrl: string | null;
  mailFrom: string;
  adminEmail: string | null;
  adminPassword: string | null;
  idp: { issuer: string | null; clientId: string | null; clientSecret: string | null };
  rateLimitPerMinute: number;
  allowPrivateNetwork: boolean;
  /** S3-compatible file storage; null keeps files under DATA_DIR/files. */
  s3: S3Settings | null;
  /**
   * Where file bytes live (FILE_STORAGE): `s3` when S3_BUCKET is set; otherwise `database` with DATABASE_URL (every
   * instance serves every file) and `local` (DATA_DIR/files) in embedded mode.
   */
  fileStorage: FileStorageKind;
  trustProxy: boolean;
  logLevel: string;
  shutdownTimeoutMs: number;
  /** Upstream AI provider settings by variable prefix (`OPENAI`, `ANTHROPIC`...): see providerSettings below. */
  providers: Record<string, ProviderSettings>;
  /** Payment channels: live credentials by channel slug, and whether channels without them run in sandbox. */
  payments: PaymentsConfig;
  /** /metrics: METRICS_PORT serves it on its own port instead of PORT; METRICS_TOKEN requires it as a bearer token. */
  metrics: { port: number | null; token: string | null };
  /** OpenTelemetry traces: on when an OTLP endpoint is set by the standard `OTEL_*` variables (platform/telemetry). */
  tracing: TracingSettings;
}

export interface PaymentChannelCredentials {
  baseUrl: string;
  /** By variable suffix, e.g. `SECRET_KEY`. */
  values: Record<string, string>;
}

export interface PaymentsConfig {
  /**
   * Channels without credentials run in sandbox: PAYMENTS_SANDBOX when set; unset, only outside production and while no
   * channel is live (a service takes real money or sandbox money, never both unless the operator asks for it).
   */
  sandbox: boolean;
  /** PAYMENTS_SANDBOX=true with NODE_ENV=production: sandbox checkouts grant for nothing, so the start warns about it. */
  sandboxInProduction: boolean;
  /** Origins (besides FRONTEND_URL's and PUBLIC_BASE_URL's) that checkout's successUrl/cancelUrl may point at. */
  returnOrigins: string[];
  /** By channel slug (the channels and their variables: src/modules/payments/gateways/<slug>/settings.ts). */
  live: Partial<Record<ChannelSlug, PaymentChannelCredentials>>;
}

/** `<PREFIX>_API_KEY` (a comma-separated list: one upstream account each), `_BASE_URL`, `_MONTHLY_BUDGET_CENTS`, `_TIMEOUT_MS`. */
export interface ProviderSettings {
  apiKeys: string[];
  baseUrl: string | null;
  /** Per upstream account; null means no budget. */
  monthlyBudgetCents: number | null;
  timeoutMs: number | null;
}

export const FILE_STORAGE_KINDS = ['local', 'database', 's3'] as const;
export type FileStorageKind = (typeof FILE_STORAGE_KINDS)[number];

/** FILE_STORAGE, defaulted from the other settings; `s3` needs S3_BUCKET and S3_BUCKET needs `s3`. */
function fileStorageKind(chosen: string | null, hasS3: boolean, hasDatabaseUrl: boolean, problems: string[]): FileStorageKind {
  const fallback: FileStorageKind = hasS3 ? 's3' : hasDatabaseUrl ? 'database' : 'local';
  if (chosen === null) return fallback;
  if (!(FILE_STORAGE_KINDS as readonly string[]).includes(chosen)) {
    problems.push(`FILE_STORAGE must be one of ${FILE_STORAGE_KINDS.join(', ')} (got "${chosen}")`);
    return fallback;
  }
  if ((chosen === 's3') !== hasS3) {
    problems.push(hasS3 ? `FILE_STORAGE=${chosen} contradicts S3_BUCKET: unset one of them` : 'FILE_STORAGE=s3 needs S3_BUCKET (and the other S3_* settings)');
  }
  return chosen as FileStorageKind;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

type Env = Record<string, string | undefined>;

/** Reads every environment variable once, validates it, and returns a typed config. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | null => {
    const value = env[name]?.trim();
    return value ? value : null;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === null) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = str(name)?.toLowerCase();
    if (raw === undefined || raw === null) return fallback;
    if (['true', '1', 'yes'].includes(raw)) return true;
    if (['false', '0', 'no'].includes(raw)) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };
  const url = (name: string, protocols: string[]): string | null => {
    const raw = str(name);
    if (raw === null) return null;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        problems.push(`${name} must use ${protocols.join(' or ')} (got "${parsed.protocol}")`);
      }
    } catch {
      problems.push(`${name} must be a valid URL`);
    }
    return raw;
  };

  const nodeEnv = str('NODE_ENV');
  const mode: Config['env'] = nodeEnv === 'production' ? 'production' : nodeEnv === 'test' ? 'test' : 'development';
  const port = int('PORT', 3000, 0, 65535);
  const dataDir = path.resolve(str('DATA_DIR') ?? './data');
  const publicBaseUrl = (url('PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const frontendUrl = (url('FRONTEND_URL', ['http:', 'https:']) ?? publicBaseUrl).replace(/\/+$/, '');
  const adminEmail = str('ADMIN_EMAIL');
  const adminPassword = str('ADMIN_PASSWORD');
  if ((adminEmail === null) !== (adminPassword === null)) {
    problems.push('ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  }
  if (adminPassword !== null && adminPassword.length < 8) {
    problems.push('ADMIN_PASSWORD must be at least 8 characters');
  }
  const jwtSecret = str('JWT_SECRET');
  const secretsEncryptionKey = str('SECRETS_ENCRYPTION_KEY');
  if (secretsEncryptionKey !== null && secretsEncryptionKey.length < 32) {
    problems.push('SECRETS_ENCRYPTION_KEY must be at least 32 characters (e.g. openssl rand -base64 32)');
  }
  if (jwtSecret !== null && jwtSecret.length < 32) {
    problems.push('JWT_SECRET must be at least 32 characters');
  }

  const config: Config = {
    env: mode,
    port,
    host: str('HOST') ?? '0.0.0.0',
    dataDir,
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    publicBaseUrl,
    frontendUrl,
    jwtSecret: jwtSecret ?? '',
    secretsEncryptionKey: secretsEncryptionKey ?? '',
    smtpUrl: url('SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: str('MAIL_FROM') ?? 'Storefront <no-reply@storefront.local>',
    adminEmail: adminEmail?.toLowerCase() ?? null,
    adminPassword,
    idp: { issuer: url('IDP_ISSUER', ['http:', 'https:']), clientId: str('IDP_CLIENT_ID'), clientSecret: str('IDP_CLIENT_SECRET') },
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 300, 1, 10_000_000),
    allowPrivateNetwork: bool('ALLOW_PRIVATE_NETWORK', false),
    s3: s3Config(str, url, bool, problems),
    fileStorage: 'local',
    trustProxy: bool('TRUST_PROXY', false),
    logLevel: logLevel(str('LOG_LEVEL'), mode, problems),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    providers: providerSettings(env, int, url),
    payments: paymentsConfig(str, url, bool, mode, problems),
    metrics: metricsConfig(str, int, port, mode, problems),
    tracing: tracingSettingsFrom(env),
  };
  config.fileStorage = fileStorageKind(str('FILE_STORAGE'), config.s3 !== null, config.databaseUrl !== null, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  // Scaled mode shares a generated key through the database instead (see createPlatform).
  if (!config.jwtSecret && !config.databaseUrl) config.jwtSecret = generatedSecret(config.dataDir, 'jwtSecret');
  if (!config.secretsEncryptionKey && !config.databaseUrl) config.secretsEncryptionKey = generatedSecret(config.dataDir, 'secretsEncryptionKey');
  return config;
}

/**
 * METRICS_PORT (a port of its own, not PORT) and METRICS_TOKEN (16+ characters, sent as a bearer token). Production
 * needs one of them: /metrics on the public port without a token shows anyone the service's traffic and money.
 */
function metricsConfig(
  str: (name: string) => string | null,
  int: (name: string, fallback: number, min: number, max: number) => number,
  servicePort: number,
  mode: Config['env'],
  problems: string[],
): Config['metrics'] {
  const port = str('METRICS_PORT') === null ? null : int('METRICS_PORT', 0, 1, 65535);
  if (port !== null && port !== 0 && port === servicePort)
    problems.push(`METRICS_PORT must differ from PORT (${servicePort}); unset it to serve /metrics on PORT`);
  const token = str('METRICS_TOKEN');
  if (token !== null && token.length < 16) problems.push('METRICS_TOKEN must be at least 16 characters');
  if (mode === 'production' && str('METRICS_PORT') === null && token === null) {
    problems.push(
      'NODE_ENV=production needs METRICS_TOKEN (16+ characters, required as a bearer token on /metrics) or METRICS_PORT (/metrics on a port of its own, kept off the load balancer), or both: otherwise anyone can read /metrics',
    );
  }
  return { port: port === 0 ? null : port, token };
}

/** S3_* settings: S3_BUCKET switches S3 storage on; the others without it are a mistake worth stopping for. */
function s3Config(
  str: (name: string) => string | null,
  url: (name: string, protocols: string[]) => string | null,
  bool: (name: string, fallback: boolean) => boolean,
  problems: string[],
): S3Settings | null {
  const bucket = str('S3_BUCKET');
  const endpoint = url('S3_ENDPOINT', ['http:', 'https:']);
  const region = str('S3_REGION');
  const accessKeyId = str('S3_ACCESS_KEY_ID');
  const secretAccessKey = str('S3_SECRET_ACCESS_KEY');
  const forcePathStyle = bool('S3_FORCE_PATH_STYLE', false);
  if (bucket === null) {
    const stray = ['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'].filter((name) => str(name) !== null);
    if (stray.length > 0) problems.push(`${stray.join(', ')} set without S3_BUCKET; set S3_BUCKET to store files in S3, or unset them`);
    return null;
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    problems.push(`S3_BUCKET must be a valid bucket name: 3-63 lower-case letters, digits, dots and hyphens (got "${bucket}")`);
  }
  if ((accessKeyId === null) !== (secretAccessKey === null)) {
    problems.push('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
  }
  if (region !== null && !/^[a-z0-9-]{2,32}$/.test(region)) {
    problems.push(`S3_REGION must look like "us-east-1" (got "${region}")`);
  }
  return { bucket, region: region ?? 'us-east-1', endpoint, accessKeyId, secretAccessKey, forcePathStyle };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(raw: string | null, mode: Config['env'], problems: string[]): string {
  if (raw === null) return mode === 'test' ? 'silent' : 'info';
  const level = raw.toLowerCase();
  if (LOG_LEVELS.includes(level)) return level;
  problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${raw}")`);
  return 'info';
}

/**
 * PAYMENTS_SANDBOX and `<CHANNEL>_...`: a channel is live with all its variables; one with none runs in sandbox when
 * sandbox is on (see PaymentsConfig.sandbox for the default); some of them is a mistake.
 */
function paymentsConfig(
  str: (name: string) => string | null,
  url: (name: string, protocols: string[]) => string | null,
  bool: (name: string, fallback: boolean) => boolean,
  mode: Config['env'],
  problems: string[],
): PaymentsConfig {
  const live: PaymentsConfig['live'] = {};
  for (const { slug, variables, baseUrl: defaultBaseUrl } of CHANNEL_SETTINGS) {
    const prefix = slug.toUpperCase();
    const values: Record<string, string> = {};
    for (const suffix of variables) {
      const value = str(`${prefix}_${suffix}`);
      if (value !== null) values[suffix] = value.replace(/\\n/g, '\n');
    }
    const baseUrl = url(`${prefix}_BASE_URL`, ['http:', 'https:'])?.replace(/\/+$/, '') ?? defaultBaseUrl;
    const missing = variables.filter((suffix) => values[suffix] === undefined);
    if (missing.length === variables.length) continue;
    if (missing.length > 0) {
      problems.push(
        `${missing.map((suffix) => `${prefix}_${suffix}`).join(', ')} must be set too for the ${slug} channel to run live (or unset its other variables for sandbox)`,
      );
      continue;
    }
    if (!baseUrl) {
      problems.push(`${prefix}_BASE_URL must be set for the ${slug} channel to run live (the carrier aggregator's API address)`);
      continue;
    }
    live[slug] = { baseUrl, values };
  }
  const returnOrigins: string[] = [];
  for (const raw of (str('PAYMENTS_RETURN_ORIGINS') ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean)) {
    try {
      const parsed = new URL(raw);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
      returnOrigins.push(parsed.origin);
    } catch {
      problems.push(`PAYMENTS_RETURN_ORIGINS must be a comma-separated list of http(s) origins (got "${raw}")`);
    }
  }
  const explicit = str('PAYMENTS_SANDBOX') === null ? null : bool('PAYMENTS_SANDBOX', false);
  const sandbox = explicit ?? (mode !== 'production' && Object.keys(live).length === 0);
  return { sandbox, sandboxInProduction: sandbox && mode === 'production', returnOrigins, live };
}

const PROVIDER_VARIABLE = /^([A-Z][A-Z0-9_]*?)_(API_KEY|BASE_URL|MONTHLY_BUDGET_CENTS|TIMEOUT_MS)$/;
/** The service's own variables that have a provider variable's shape; they never name a provider. */
const OWN_VARIABLES = new Set(['PUBLIC_BASE_URL', 'SHUTDOWN_TIMEOUT_MS']);
/** Payment channel variables (`DCB_API_KEY`, `CARD_GLOBAL_BASE_URL` ...) never name an AI provider. */
const PAYMENT_PREFIXES = CHANNEL_SETTINGS.map(({ slug }) => `${slug.toUpperCase()}_`);

/** Every provider-shaped variable, grouped by prefix; the gateway uses the prefixes that name a catalog provider. */
function providerSettings(
  env: Env,
  int: (name: string, fallback: number, min: number, max: number) => number,
  url: (name: string, protocols: string[]) => string | null,
): Record<string, ProviderSettings> {
  const settings: Record<string, ProviderSettings> = {};
  for (const name of Object.keys(env).sort()) {
    const match = PROVIDER_VARIABLE.exec(name);
    if (!match || OWN_VARIABLES.has(name) || PAYMENT_PREFIXES.some((prefix) => name.startsWith(prefix)) || !env[name]?.trim()) continue;
    const prefix = match[1]!;
    const entry = (settings[prefix] ??= { apiKeys: [], baseUrl: null, monthlyBudgetCents: null, timeoutMs: null });
    if (match[2] === 'API_KEY')
      entry.apiKeys = [
        ...new Set(
          env[name]
            .split(',')
            .map((key) => key.trim())
            .filter(Boolean),
        ),
      ];
    if (match[2] === 'BASE_URL') entry.baseUrl = url(name, ['http:', 'https:'])?.replace(/\/+$/, '') ?? null;
    if (match[2] === 'MONTHLY_BUDGET_CENTS') entry.monthlyBudgetCents = int(name, 0, 0, 10_000_000_000);
    if (match[2] === 'TIMEOUT_MS') entry.timeoutMs = int(name, 60_000, 100, 3_600_000);
  }
  return settings;
}

/** A secret generated once and kept in DATA_DIR/secrets.json, so restarts keep sessions valid. */
function generatedSecret(dataDir: string, name: string): string {
  const file = path.join(dataDir, 'secrets.json');
  mkdirSync(dataDir, { recursive: true });
  const secrets = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {};
  if (!secrets[name]) {
    secrets[name] = randomBytes(48).toString('base64url');
    writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets[name];
}
