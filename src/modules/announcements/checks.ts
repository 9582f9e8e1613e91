import { badRequest } from '../../platform/http/errors.js';
import type { AnnouncementAudience } from './types.js';

/** The stored shape of a whole announcement, checked: plans exist and go with the PLANS audience, the window is ordered. */
export async function checkAnnouncement(
  deps: { planExists: (slug: string) => Promise<boolean> },
  merged: { audience: AnnouncementAudience; plans: string[]; startsAt: Date; endsAt: Date | null },
) {
  if (merged.audience === 'PLANS' && merged.plans.length === 0) {
    throw badRequest('Name at least one plan (by slug) for the PLANS audience.', { field: 'plans' });
  }
  if (merged.audience !== 'PLANS' && merged.plans.length > 0) {
    throw badRequest('Plans go with the PLANS audience only; set audience to PLANS or leave plans out.', { field: 'plans' });
  }
  for (const slug of merged.plans) {
    if (!(await deps.planExists(slug)))
      throw badRequest(`There is no plan "${slug}". Name plans by their slug, as GET /v1/plans lists them.`, { field: 'plans' });
  }
  if (merged.endsAt && merged.endsAt <= merged.startsAt) throw badRequest('endsAt must be after startsAt.', { field: 'endsAt' });
}
