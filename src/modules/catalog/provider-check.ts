import type { ModelAvailability, ModelStatus } from '../../db/schema/catalog.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { CatalogSnapshot, ModelEntry } from './snapshot.js';

/**
 * The catalog check: the catalog's models next to what each provider says it serves, so an operator learns that a
 * provider retired a model before customers do (Google shut Imagen 4 down on 2026-08-17 while the catalog still sold
 * it). Read-only: it reports, and changes nothing; docs/operations.md says what to do with each finding. The lists
 * come from the gateway (gateway/routing/upstream-models.ts), asked with its accounts through its outbound client.
 */

/** What a provider said it serves, as the gateway reports it. */
export type ProviderListing =
  | { status: 'LISTED'; models: string[] }
  | { status: 'NOT_CHECKABLE' | 'NOT_CONFIGURED'; reason: string }
  | { status: 'ERROR'; reason: string; error: { code: string; status: number | null; message: string } };

export interface ProviderLister {
  /** Providers the gateway has an adapter for (custom OpenAI-compatible ones included). */
  providers(): string[];
  list(providerSlug: string): Promise<ProviderListing>;
}

export interface CheckedModel {
  slug: string;
  upstreamModel: string;
  status: ModelStatus;
  availability: ModelAvailability;
}

export type ProviderCheckStatus = 'CHECKED' | 'NOT_CHECKABLE' | 'NOT_CONFIGURED' | 'ERROR';

export interface ProviderCheckResult {
  provider: string;
  status: ProviderCheckStatus;
  /** Why a provider was not checked, or how it failed to answer. */
  reason: string | null;
  error: { code: string; status: number | null; message: string } | null;
  /** Catalog models of the provider compared (retired ones are not: nobody is sold them). */
  catalogModels: number;
  /** Models the provider listed; null when it listed none. */
  upstreamModels: number | null;
  /** Catalog models whose upstream name the provider no longer lists: customers get errors from them. */
  notServed: CheckedModel[];
  /** Upstream names the provider serves that no catalog model (retired ones included) names. */
  notInCatalog: string[];
}

export interface ProviderCheckReport {
  checkedAt: string;
  summary: { providers: number; checked: number; notCheckable: number; notConfigured: number; errors: number; notServed: number; notInCatalog: number };
  providers: ProviderCheckResult[];
}

const checkedModel = (entry: ModelEntry): CheckedModel => ({
  slug: entry.row.slug,
  upstreamModel: entry.row.upstreamModel,
  status: entry.row.status,
  availability: entry.row.availability,
});

function resultOf(provider: string, entries: ModelEntry[], listing: ProviderListing): ProviderCheckResult {
  const sold = entries.filter((e) => e.row.availability !== 'RETIRED');
  const base = { provider, catalogModels: sold.length, upstreamModels: null, notServed: [], notInCatalog: [] };
  if (listing.status === 'ERROR') return { ...base, status: 'ERROR', reason: listing.reason, error: listing.error };
  if (listing.status !== 'LISTED') return { ...base, status: listing.status, reason: listing.reason, error: null };
  const served = new Set(listing.models);
  const known = new Set(entries.map((e) => e.row.upstreamModel));
  return {
    ...base,
    status: 'CHECKED',
    reason: null,
    error: null,
    upstreamModels: served.size,
    notServed: sold
      .filter((e) => !served.has(e.row.upstreamModel))
      .map(checkedModel)
      .sort((a, b) => (a.slug < b.slug ? -1 : 1)),
    notInCatalog: [...served].filter((name) => !known.has(name)).sort(),
  };
}

export function createProviderCheck(deps: { snapshot: () => Promise<CatalogSnapshot>; upstream: ProviderLister; clock: Clock }) {
  return {
    /** Asks every provider at once; one that fails is reported as an ERROR, the others as usual. */
    async run(): Promise<ProviderCheckReport> {
      const snap = await deps.snapshot();
      const byProvider = new Map<string, ModelEntry[]>();
      for (const entry of snap.bySlug.values()) byProvider.set(entry.provider.slug, [...(byProvider.get(entry.provider.slug) ?? []), entry]);
      const sells = (slug: string) => (byProvider.get(slug) ?? []).some((e) => e.row.availability !== 'RETIRED');
      const slugs = [...new Set([...deps.upstream.providers(), ...[...byProvider.keys()].filter(sells)])].filter((slug) => slug !== 'local').sort();
      const results = await Promise.all(slugs.map(async (slug) => resultOf(slug, byProvider.get(slug) ?? [], await deps.upstream.list(slug))));
      // A provider with no account and nothing in the catalog has nothing to report.
      const providers = results.filter((r) => r.status !== 'NOT_CONFIGURED' || r.catalogModels > 0);
      const count = (status: ProviderCheckStatus) => providers.filter((r) => r.status === status).length;
      return {
        checkedAt: deps.clock.now().toISOString(),
        summary: {
          providers: providers.length,
          checked: count('CHECKED'),
          notCheckable: count('NOT_CHECKABLE'),
          notConfigured: count('NOT_CONFIGURED'),
          errors: count('ERROR'),
          notServed: providers.reduce((n, r) => n + r.notServed.length, 0),
          notInCatalog: providers.reduce((n, r) => n + r.notInCatalog.length, 0),
        },
        providers,
      };
    },
  };
}

export type ProviderCheck = ReturnType<typeof createProviderCheck>;

/** Whether the report asks for an operator: a model customers are sold that its provider dropped, or a provider that did not answer. */
export const needsAction = (report: ProviderCheckReport) => report.summary.notServed > 0 || report.summary.errors > 0;

/** The report as text for a terminal (`npm run catalog:check`). */
export function formatProviderCheck(report: ProviderCheckReport): string {
  const lines = [`Catalog check at ${report.checkedAt}`];
  for (const r of report.providers) {
    if (r.status !== 'CHECKED') {
      lines.push(`${r.provider}: ${r.status.replace('_', ' ').toLowerCase()}: ${r.reason ?? ''}`.trimEnd());
      continue;
    }
    lines.push(`${r.provider}: ${r.catalogModels} catalog models, ${r.upstreamModels} served upstream`);
    for (const m of r.notServed) lines.push(`  NOT SERVED  ${m.slug} (upstream "${m.upstreamModel}", ${m.status}, ${m.availability})`);
    if (r.notInCatalog.length > 0) lines.push(`  not in the catalog: ${r.notInCatalog.join(', ')}`);
  }
  const s = report.summary;
  lines.push(
    `${s.checked} checked, ${s.errors} failed, ${s.notCheckable} not checkable, ${s.notConfigured} not configured; ${s.notServed} catalog models not served, ${s.notInCatalog} served models not in the catalog.`,
  );
  if (needsAction(report)) lines.push('Action needed: see "The catalog check" in docs/operations.md.');
  return lines.join('\n');
}
