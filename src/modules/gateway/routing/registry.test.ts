import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../config.js';
import { ManualClock } from '../../../platform/clock/clock.js';
import { buildMediaProviders } from './media-adapters.js';
import { buildProviderRegistry, envPrefixOf } from './registry.js';

const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/storefront-registry-test', JWT_SECRET: 'x'.repeat(40), ...env });

describe('provider settings from the environment', () => {
  it('reads comma-separated keys (trimmed, de-duplicated), base URL, budget and timeout per prefix', () => {
    const { providers } = config({
      OPENAI_API_KEY: ' sk-1, sk-2,,sk-1 ',
      OPENAI_BASE_URL: 'http://127.0.0.1:9999/v1/',
      OPENAI_MONTHLY_BUDGET_CENTS: '5000',
      OPENAI_TIMEOUT_MS: '30000',
      ANTHROPIC_API_KEY: 'sk-ant',
    });
    expect(providers.OPENAI).toEqual({ apiKeys: ['sk-1', 'sk-2'], baseUrl: 'http://127.0.0.1:9999/v1', monthlyBudgetCents: 5000, timeoutMs: 30000 });
    expect(providers.ANTHROPIC).toEqual({ apiKeys: ['sk-ant'], baseUrl: null, monthlyBudgetCents: null, timeoutMs: null });
  });

  it.each([
    ['a budget that is not a number', { OPENAI_MONTHLY_BUDGET_CENTS: 'lots' }, 'OPENAI_MONTHLY_BUDGET_CENTS'],
    ['a base URL that is not http', { GROQ_BASE_URL: 'ftp://example.com' }, 'GROQ_BASE_URL'],
    ['a timeout below 100 ms', { OPENAI_TIMEOUT_MS: '5' }, 'OPENAI_TIMEOUT_MS'],
  ])('refuses %s at start, naming the variable', (_label, env, name) => {
    expect(() => config(env)).toThrow(ConfigError);
    expect(() => config(env)).toThrow(name);
  });
});

describe('buildProviderRegistry', () => {
  it('always has the built-in local provider and one account per configured key', () => {
    const registry = buildProviderRegistry(config({ OPENAI_API_KEY: 'sk-alpha-1111,sk-bravo-2222' }).providers);
    expect(registry.get('local')!.adapter.kind).toBe('local');
    expect(registry.get('local')!.accounts).toHaveLength(1);
    const openai = registry.get('openai')!;
    expect(openai.adapter.kind).toBe('openai');
    expect(openai.accounts.map((a) => ({ label: a.label, keyHint: a.keyHint, apiKey: a.apiKey }))).toEqual([
      { label: 'OPENAI_API_KEY #1', keyHint: '1111', apiKey: 'sk-alpha-1111' },
      { label: 'OPENAI_API_KEY #2', keyHint: '2222', apiKey: 'sk-bravo-2222' },
    ]);
    expect(new Set(openai.accounts.map((a) => a.fingerprint)).size).toBe(2);
    expect(openai.accounts[0]!.fingerprint).not.toContain('sk-alpha');
    expect(registry.get('anthropic')!.adapter.kind).toBe('anthropic');
    expect(registry.get('anthropic')!.accounts).toEqual([]);
  });

  it('gives keyless local servers one account and serves unknown prefixes with a base URL as OpenAI-compatible', () => {
    const registry = buildProviderRegistry(
      config({ OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1', MY_LLM_BASE_URL: 'http://127.0.0.1:8001/v1', OPENAI_BASE_URL: 'http://proxy.internal/v1' })
        .providers,
    );
    expect(registry.get('ollama')!.accounts).toMatchObject([{ apiKey: null, baseUrl: 'http://127.0.0.1:11434/v1' }]);
    expect(registry.get('my-llm')!.adapter.kind).toBe('openai');
    expect(registry.get('my-llm')!.accounts).toHaveLength(1);
    // A provider that needs a key gets no account from a base URL alone.
    expect(registry.get('openai')!.accounts).toEqual([]);
  });

  it('derives the variable prefix from the provider slug', () => {
    expect(envPrefixOf('openai')).toBe('OPENAI');
    expect(envPrefixOf('together-ai')).toBe('TOGETHER_AI');
  });
});

describe('keys made of parts (Kling: <access key>:<secret key>)', () => {
  const mediaOnly = () => buildMediaProviders(new ManualClock()).mediaOnly;

  it('hints an account by its access key, never by its secret', () => {
    const registry = buildProviderRegistry(config({ KLING_API_KEY: 'AKalpha1111:SKsecret9999' }).providers, { mediaOnly: mediaOnly() });
    expect(registry.get('kling')!.accounts.map((a) => a.keyHint)).toEqual(['1111']);
  });

  it('refuses to start with a key missing its secret part, naming the variable and the expected form', () => {
    expect(() => buildProviderRegistry(config({ KLING_API_KEY: 'AKalpha1111' }).providers, { mediaOnly: mediaOnly() })).toThrow(
      /KLING_API_KEY has no secret key after a colon: give each account as <access key>:<secret key>/,
    );
  });
});
