// ESLint flat config: typescript-eslint's type-aware recommended rules over every TypeScript file of the
// repository (src, test, bench, scripts, the tool configs). Module boundaries are checked by dependency-cruiser
// (.dependency-cruiser.cjs), not here; `npm run lint` runs both. Every rule switched off says why beside it.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['dist/', 'data/', 'coverage/', '.cache/', 'src/db/migrations/', 'packages/client/src/schema.d.ts']),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // tsconfig.json covers src, test, bench, scripts and the tool configs, so every file is type-checked.
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `async` marks functions that fulfil a Promise-returning contract (Fastify plugins, provider adapters, hooks)
      // and turns their throws into rejections; removing it from the ones that happen not to await would change that.
      '@typescript-eslint/require-await': 'off',
      // Augmenting a library's interface (Fastify's route config) takes an interface that only extends ours.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
      // A leading underscore names a deliberately unused binding (an omitted property, a parameter a contract requires).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    files: ['**/*.test.ts', '**/*.fake.ts', 'test/**/*.ts'],
    rules: {
      // Tests and fake upstreams read JSON bodies (ours and the providers' wire formats) as untyped data and assert
      // on them; the assertion is the check, so typing every body would add noise, not safety.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off', // same reason: untyped JSON bodies in tests
      '@typescript-eslint/no-unsafe-assignment': 'off', // same reason: untyped JSON bodies in tests
      '@typescript-eslint/no-unsafe-call': 'off', // same reason: untyped JSON bodies in tests
      '@typescript-eslint/no-unsafe-member-access': 'off', // same reason: untyped JSON bodies in tests
      '@typescript-eslint/no-unsafe-return': 'off', // same reason: untyped JSON bodies in tests
    },
  },
  {
    files: ['src/modules/payments/gateways/**/*.ts'],
    rules: {
      // Payment gateway adapters and their sandbox simulators parse each gateway's wire format (JSON the gateway
      // defines, often loosely typed: amounts as strings or numbers). Every field they use is checked where it is read
      // (signature, status, amount parsed by fromDecimal), so typing each foreign body would add noise, not safety.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off', // same reason: gateway wire formats
      '@typescript-eslint/no-unsafe-assignment': 'off', // same reason: gateway wire formats
      '@typescript-eslint/no-unsafe-member-access': 'off', // same reason: gateway wire formats
    },
  },
  {
    // The metered call's path (docs/decisions.md, "Object literals that start with a spread"): on Node 20 such a literal
    // with more members after the spread builds a new hidden class for every object it makes (0.6-7 us each).
    files: [
      'src/modules/gateway/metering/*.ts',
      'src/modules/gateway/text/{text,prepare,fallbacks,stream,stream-pump,types,capabilities}.ts',
      'src/modules/gateway/surfaces/text-body.ts',
      'src/modules/gateway/providers/openai.ts',
      'src/modules/gateway/providers/openai-http.ts',
      'src/modules/wallet/service.ts',
      'src/modules/wallet/{reserving,settlement,reservation-close,reservation-leases,context,counters,low-balance,movements}.ts',
      'src/modules/wallet/reserve.ts',
      'src/modules/wallet/quick-settle.ts',
      'src/modules/usage/service.ts',
      'src/modules/library/generations.ts',
      'src/modules/apikeys/{service,verification,key-controls,key-listing}.ts',
      'src/platform/auth/**/*.ts',
      'src/platform/db/**/*.ts',
      'src/platform/events/**/*.ts',
    ],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression[properties.length>1] > SpreadElement:first-child',
          message:
            'On the metered path, do not start an object literal with a spread followed by more members (Node 20 builds a new hidden class for each such object): list the members first, or Object.assign onto a fresh object.',
        },
      ],
    },
  },
  {
    // Plain JavaScript (this file, the dependency-cruiser config, the build script) is outside the TypeScript program.
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', module: 'writable' } },
  },
);
