import { apiKeys } from '../../db/schema/apikeys.js';
import type { KeyControls } from '../../platform/auth/plugin.js';
import { badRequest } from '../../platform/http/errors.js';
import type { KeyControlsInput } from './schemas.js';

type ApiKeyRow = typeof apiKeys.$inferSelect;

/** The key's controls as the gateway reads them; null when it has none (the common case costs nothing). */
export function controlsOf(row: Pick<ApiKeyRow, 'budgetTokens' | 'budgetPeriod' | 'rateLimitPerMinute' | 'allowedModels'>): KeyControls | null {
  const budget = row.budgetTokens !== null && row.budgetPeriod !== null ? { tokens: row.budgetTokens, period: row.budgetPeriod } : null;
  if (!budget && row.rateLimitPerMinute === null && row.allowedModels === null) return null;
  return { budget, requestsPerMinute: row.rateLimitPerMinute, allowedModels: row.allowedModels };
}

/** The columns of the controls given (an omitted one is left as it is); unknown model slugs are a 400. */
export async function controlColumns(deps: { modelExists?: (slug: string) => Promise<boolean> }, input: KeyControlsInput) {
  const columns: Partial<Pick<ApiKeyRow, 'budgetTokens' | 'budgetPeriod' | 'rateLimitPerMinute' | 'allowedModels'>> = {};
  if (input.budget !== undefined) {
    columns.budgetTokens = input.budget?.tokens ?? null;
    columns.budgetPeriod = input.budget?.period ?? null;
  }
  if (input.rateLimit !== undefined) columns.rateLimitPerMinute = input.rateLimit?.requestsPerMinute ?? null;
  if (input.allowedModels !== undefined) {
    const slugs = input.allowedModels === null ? null : [...new Set(input.allowedModels.map((slug) => slug.trim()))];
    if (slugs && deps.modelExists) {
      const unknown: { index: number; slug: string }[] = [];
      for (const [index, slug] of slugs.entries()) if (!(await deps.modelExists(slug))) unknown.push({ index, slug });
      if (unknown.length > 0) {
        throw badRequest(
          `allowedModels names models that do not exist: ${unknown.map((u) => JSON.stringify(u.slug)).join(', ')}. Read model slugs from GET /v1/models.`,
          unknown.map((u) => ({ field: `allowedModels.${u.index}`, message: `no model with slug "${u.slug}"` })),
        );
      }
    }
    columns.allowedModels = slugs;
  }
  return columns;
}
