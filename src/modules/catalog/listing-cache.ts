import { createHash } from 'node:crypto';

export interface RenderedListing {
  /** UTF-8 bytes, encoded once rather than on every send. */
  body: Buffer;
  etag: string;
}

const MAX_VARIANTS = 256;

/**
 * Rendered model listings, kept for as long as the catalog and plan states they were rendered from are current
 * (both are immutable snapshot objects, so a change simply starts a new cache). A listing depends only on the
 * filters and the caller's plan, so a few hundred models are serialised once per variant, not once per request.
 */
export function createListingCache() {
  const byState = new WeakMap<object, WeakMap<object, Map<string, RenderedListing>>>();
  return {
    get(catalogState: object, planState: object, variant: string, render: () => string): RenderedListing {
      let byPlans = byState.get(catalogState);
      if (!byPlans) byState.set(catalogState, (byPlans = new WeakMap()));
      let variants = byPlans.get(planState);
      if (!variants) byPlans.set(planState, (variants = new Map<string, RenderedListing>()));
      let rendered = variants.get(variant);
      if (!rendered) {
        const body = Buffer.from(render(), 'utf8');
        rendered = { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"` };
        if (variants.size >= MAX_VARIANTS) variants.clear();
        variants.set(variant, rendered);
      }
      return rendered;
    },
  };
}

/** True when the request's If-None-Match names this entity tag (weak comparison, as for GET). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
