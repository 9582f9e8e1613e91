// `npm run admin -- <command>`: the operators' CLI. It builds the same platform and services as the server (from the
// same environment: DATA_DIR or DATABASE_URL) and goes through the services only, never raw SQL. Every change is
// audited with the CLI actor. Run `npm run admin -- help` for the commands.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform/platform.js';
import { EmbeddedDatabaseInUseError } from '../src/platform/db/embedded-lock.js';
import { createServices, type Services } from '../src/services.js';
import { CLI_ACTOR, auditWriterFor } from '../src/modules/audit/service.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../src/modules/auth/index.js';

const HELP = `Storefront admin CLI

Usage: npm run admin -- <command> [arguments]

Commands:
  create-admin <email> [--super]
      Creates an operator account (ADMIN, or SUPER_ADMIN with --super), or promotes the existing account with
      this email (its password is left alone; a role is never lowered). A new account needs a password: set
      ADMIN_CLI_PASSWORD in the environment, or pass --password-stdin and send it on standard input (first line).
      Passwords are never taken as arguments (they would stay in the shell history and the process list).
  grant <email> <tokens> --reason "<why>" [--key <idempotency key>]
      Adds tokens to the account's wallet as a GRANT ledger row with the reason. The same --key never grants
      twice, so a retried command is safe; without --key one is generated and printed for a retry.
  providers
      Lists the AI providers with their health (ACTIVE, DEGRADED, INACTIVE, DISABLED) and model counts.
  help
      Shows this text.

The CLI reads the same environment as the server (DATA_DIR, DATABASE_URL, ...). Changes are recorded in the
admin audit trail with the actor role CLI.`;

class UsageError extends Error {}

/** Positional arguments and `--flag [value]` options (`boolean` names flags that take no value). */
function parseArgs(argv: string[], boolean: string[]): { positional: string[]; flags: Map<string, string | true> } {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const name = arg.slice(2);
    if (boolean.includes(name)) flags.set(name, true);
    else {
      const value = argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value.`);
      flags.set(name, value);
    }
  }
  return { positional, flags };
}

async function readStdinLine(): Promise<string> {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

async function createAdmin(services: Services, args: string[]): Promise<string> {
  const { positional, flags } = parseArgs(args, ['super', 'password-stdin']);
  const [email] = positional;
  if (!email || positional.length > 1 || !email.includes('@')) throw new UsageError('Usage: create-admin <email> [--super] [--password-stdin]');
  const password = flags.has('password-stdin') ? await readStdinLine() : (process.env.ADMIN_CLI_PASSWORD ?? null);
  if (password !== null && (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH)) {
    throw new UsageError(`The password must be ${MIN_PASSWORD_LENGTH}-${MAX_PASSWORD_LENGTH} characters long.`);
  }
  const role = flags.has('super') ? 'SUPER_ADMIN' : 'ADMIN';
  const existing = await services.auth.data.users.findActiveByEmail(email);
  if (!existing && password === null) throw new UsageError('A new account needs a password: set ADMIN_CLI_PASSWORD or use --password-stdin.');
  const { outcome, user } = await services.auth.admin.ensureOperator({ email, password, role }, auditWriterFor(services.audit, CLI_ACTOR));
  return `${outcome}: ${user.email} (${user.id}) is ${user.role}`;
}

async function grant(services: Services, args: string[]): Promise<string> {
  const { positional, flags } = parseArgs(args, []);
  const [email, amount] = positional;
  const reason = flags.get('reason');
  if (!email || !amount || positional.length > 2 || typeof reason !== 'string')
    throw new UsageError('Usage: grant <email> <tokens> --reason "<why>" [--key <idempotency key>]');
  if (!/^[1-9][0-9]{0,12}$/.test(amount)) throw new UsageError('<tokens> must be a whole number of tokens, at least 1.');
  if (!reason.trim()) throw new UsageError('--reason must say why the tokens are granted.');
  const user = await services.auth.data.users.findActiveByEmail(email);
  if (!user) throw new UsageError(`No account has the email ${email}.`);
  const key = (flags.get('key') as string | undefined) ?? randomUUID();
  const result = await services.wallet.supportGrant(
    { userId: user.id, tokens: Number(amount), reason: reason.trim(), idempotencyKey: key },
    auditWriterFor(services.audit, CLI_ACTOR),
  );
  const what = result.applied ? `granted ${result.tokens} tokens to` : `already granted with this key (${result.tokens} tokens); nothing changed for`;
  return `${what} ${user.email}: balance ${result.balance} tokens (key ${key})`;
}

async function providers(services: Services): Promise<string> {
  const { providersBySlug, byId } = await services.catalog.snapshot();
  const models = new Map<string, number>();
  for (const entry of byId.values()) models.set(entry.provider.slug, (models.get(entry.provider.slug) ?? 0) + 1);
  const rows = [...providersBySlug.values()].sort((a, b) => a.slug.localeCompare(b.slug));
  const width = Math.max(8, ...rows.map((p) => p.slug.length));
  return [
    `${'PROVIDER'.padEnd(width)}  ${'HEALTH'.padEnd(9)}  MODELS`,
    ...rows.map((p) => `${p.slug.padEnd(width)}  ${p.status.padEnd(9)}  ${models.get(p.slug) ?? 0}`),
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (!command || command === 'help' || command === '--help') {
    console.log(HELP);
    return command ? 0 : 1;
  }
  if (!['create-admin', 'grant', 'providers'].includes(command)) {
    console.error(`Unknown command "${command}".\n\n${HELP}`);
    return 1;
  }
  const config = loadConfig();
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' }) as unknown as FastifyBaseLogger;
  const platform = await createPlatform(config, logger);
  try {
    const services = createServices(platform);
    // Reference data the commands rely on (the free plan new accounts get, the catalog), as the server's start does.
    await services.catalog.seed();
    await services.plans.seed();
    const output =
      command === 'create-admin' ? await createAdmin(services, args) : command === 'grant' ? await grant(services, args) : await providers(services);
    console.log(output);
    services.wallet.stop();
    return 0;
  } finally {
    await platform.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) console.error(err.message);
    else if (err instanceof Error && 'statusCode' in err) console.error(`refused: ${err.message}`);
    else if (err instanceof EmbeddedDatabaseInUseError) console.error(err.message);
    else console.error('admin command failed:', err);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
