// The layers and table owners below are drawn and explained in docs/architecture.md.
// Module boundaries of Storefront, checked by dependency-cruiser (`npm run lint`; docs/decisions.md, "Module
// boundaries and lint", explains the rules). Type-only imports count everywhere (tsPreCompilationDeps), so a
// type-only cycle or a type import of another module's internals is refused like any other.

/**
 * The module layers of docs/architecture.md ("Layers and what each may import"): a module imports modules of its own
 * layer or lower ones, never higher ones. A new module gets its line here (the check refuses a module that has none).
 */
const LAYERS = [
  ['audit', 'auth', 'wallet', 'catalog', 'plans', 'files', 'notifications', 'usage', 'flags', 'announcements'],
  ['subscriptions', 'gateway', 'jobs', 'library', 'account', 'apikeys'],
  ['payments', 'topup', 'community', 'workspaces', 'webhooks', 'compat'],
  ['admin', 'playground'],
];

/**
 * Who reads and writes the tables of each `src/db/schema/<file>.ts`. Any other code calls the owner's service.
 * `platform` stands for `src/platform/`. Type-only imports of a schema file are allowed (a row type cannot read or
 * write); the schema files reference each other for foreign keys.
 */
const TABLE_OWNERS = {
  'account.ts': ['account'],
  'announcements.ts': ['announcements'],
  'apikeys.ts': ['apikeys'],
  'audit.ts': ['audit'],
  'auth.ts': ['auth'],
  'catalog.ts': ['catalog'],
  'community.ts': ['community'],
  'coupons.ts': ['subscriptions'],
  'files.ts': ['files'],
  'flags.ts': ['flags'],
  'gateway.ts': ['gateway'],
  'jobs.ts': ['jobs'],
  'library.ts': ['library'],
  'notifications.ts': ['notifications'],
  'payments.ts': ['payments'],
  'plans.ts': ['plans'],
  'playground.ts': ['playground'],
  'responses.ts': ['compat'],
  'topup.ts': ['topup'],
  'platform.ts': ['platform'],
  // A key-value store: each owner reads and writes its own keys only (catalog: pricing; plans: the seed digest).
  'settings.ts': ['catalog', 'plans'],
  'subscriptions.ts': ['subscriptions'],
  'usage.ts': ['usage'],
  'wallet.ts': ['wallet'],
  'webhooks.ts': ['webhooks'],
  'workspaces.ts': ['workspaces'],
};

/**
 * Test code: `*.test.ts`, the providers' fakes (`*.fake.ts`, beside the adapter they stand in for), the harness and
 * cross-module tests in `test/`, and the benchmarks' fixtures in `bench/`. It may cross module boundaries and touch any
 * table to set up fixtures and check results (never the other way: production code does not import test code).
 */
const TEST_CODE = ['\\.test\\.ts$', '\\.fake\\.ts$', '^test/', '^bench/'];

/** A module's public entry: its service (factory and exported types) and, when it has one, its `index.ts`. */
const PUBLIC_ENTRY = '^src/modules/[^/]+/(service|index)\\.ts$';
/** A module's route plugins: `routes.ts` or `<name>.routes.ts`, in the module's folder or one of its concept folders. */
const ROUTE_FILE = ['^src/modules/[^/]+/(routes|[^/]+[.]routes)[.]ts$', '^src/modules/[^/]+/[^/]+/(routes|[^/]+[.]routes)[.]ts$'];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ownerPath = (owner) => (owner === 'platform' ? '^src/platform/' : `^src/modules/${owner}/`);

const layerRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${index + 1}-imports-no-higher-layer`,
  comment: `Modules of layer ${index + 1} (${layer.join(', ')}) do not import modules of a higher layer: ${LAYERS.slice(index + 1)
    .flat()
    .join(', ')}. Something low that must cause work higher up emits a domain event or takes a hook.`,
  severity: 'error',
  from: { path: `^src/modules/(${layer.join('|')})/`, pathNot: TEST_CODE },
  to: {
    path: `^src/modules/(${LAYERS.slice(index + 1)
      .flat()
      .join('|')})/`,
  },
}));

const tableRules = Object.entries(TABLE_OWNERS).map(([file, owners]) => ({
  name: `tables-of-${file.replace(/\.ts$/, '')}`,
  comment: `The tables of src/db/schema/${file} are read and written by ${owners.join(' and ')} alone; others call the owner's service.`,
  severity: 'error',
  from: { path: '^src/', pathNot: [...owners.map(ownerPath), '^src/db/schema/', ...TEST_CODE] },
  to: { path: `^src/db/schema/${escape(file)}$`, dependencyTypesNot: ['type-only'] },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only ones included: extract what both sides need into a third file.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'platform-imports-no-module',
      comment: 'src/platform/ holds cross-cutting mechanisms with no domain knowledge: it imports nothing from src/modules/ or the composition roots.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/(modules/|services\\.ts$|domain-jobs\\.ts$|app\\.ts$|main\\.ts$)' },
    },
    {
      name: 'module-imports-public-entry-only',
      comment: `A module imports another module only through its public entry (service.ts, or index.ts when it has one), never its internals. Move what both need to src/platform/ or publish it from the owner's index.ts.`,
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/', pathNot: TEST_CODE },
      to: { path: '^src/modules/', pathNot: ['^src/modules/$1/', PUBLIC_ENTRY] },
    },
    {
      name: 'composition-roots-import-entries',
      comment:
        'The composition roots (src/services.ts, src/domain-jobs.ts, src/app.ts) build modules from their public entries, their queue definitions (jobs.ts) and, for app.ts, their route plugins.',
      severity: 'error',
      from: { path: '^src/(services|domain-jobs|app)\\.ts$' },
      to: { path: '^src/modules/', pathNot: [PUBLIC_ENTRY, '^src/modules/[^/]+/jobs\\.ts$', ...ROUTE_FILE] },
    },
    {
      name: 'routes-only-from-app',
      comment: 'Route plugins (routes.ts, *.routes.ts) are registered by src/app.ts; nothing else imports them (shared HTTP helpers go to src/platform/http/).',
      severity: 'error',
      from: { pathNot: ['^src/app\\.ts$', ...TEST_CODE] },
      to: { path: ROUTE_FILE },
    },
    {
      name: 'modules-reach-no-composition-root',
      comment: 'Modules and schema files never import the composition roots or the process entry.',
      severity: 'error',
      from: { path: '^src/(modules|db)/' },
      to: { path: '^src/(services|domain-jobs|app|main)\\.ts$' },
    },
    {
      name: 'schema-imports-schema-only',
      comment: 'Table definitions (src/db/schema/) depend on each other (foreign keys) and on libraries, nothing else of ours.',
      severity: 'error',
      from: { path: '^src/db/schema/' },
      to: { path: '^(src|test|bench|scripts)/', pathNot: '^src/db/schema/' },
    },
    {
      name: 'schema-index-for-drizzle-kit-only',
      comment: 'src/db/schema/index.ts gathers every table for drizzle-kit (drizzle.config.ts names it); code imports the one schema file it owns.',
      severity: 'error',
      from: {},
      to: { path: '^src/db/schema/index\\.ts$' },
    },
    ...tableRules,
    ...layerRules,
    {
      name: 'module-has-a-layer',
      comment: 'Every folder of src/modules/ has a line in LAYERS of .dependency-cruiser.cjs (add the new module there).',
      severity: 'error',
      from: { path: `^src/modules/(?!(${LAYERS.flat().join('|')})/)[^/]+/` },
      to: {},
    },
    {
      name: 'production-imports-no-test-code',
      comment: 'Production code never imports test code; fixtures live under test/.',
      severity: 'error',
      from: { path: '^(src|scripts)/', pathNot: TEST_CODE },
      to: { path: TEST_CODE },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that does not resolve to a file (or an installed package).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    exclude: { path: ['^src/db/migrations/'] },
    // Type-only imports are dependencies too (a type-only cycle is still a cycle).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
