import type { Tx } from '../../platform/db/database.js';
import { createAnalytics } from './analytics.js';
import { createComments } from './comments.js';
import type { CommunityServiceDeps } from './deps.js';
import { createCommunityExport } from './export.js';
import { createFeeds } from './feeds.js';
import { createWorkImporter } from './import.js';
import { communityJobs } from './jobs.js';
import { createPosts } from './posts.js';
import { createSocial } from './social.js';
import { createPostViews } from './views.js';
import { createModeration } from './moderation.js';
import { createWorks } from './works.js';

export type { CommunityServiceDeps } from './deps.js';
export type { ImportedWork } from './import.js';
export type { ReportQuery, ReportStatus } from './moderation.js';
export { createWorkImporter } from './import.js';

/**
 * The community: posts (likes, comments, shares, analytics, remixes), feeds (recent, trending, following), the
 * gallery of works (imported and native), and the social graph (profiles, follows, reports).
 */
export function createCommunityService(deps: CommunityServiceDeps) {
  const views = createPostViews(deps);
  const works = createWorks(deps);
  const posts = createPosts(deps, views, works);
  const feeds = createFeeds(deps, views);
  const comments = createComments(deps, posts);
  const social = createSocial(deps, posts);
  const analytics = createAnalytics(deps);
  return {
    posts,
    feeds,
    comments,
    social,
    works,
    analytics,
    /** Admin moderation of reports: the queue, resolving, hiding reported content (see moderation.ts). */
    moderation: createModeration(deps, works),
    /** The community's part of a user's data export (registered with the account service). */
    exportSection: createCommunityExport(deps),
    /** Imports an external feed of works (see `createWorkImporter`). */
    importer: createWorkImporter(deps),
    /** The account module's hook when an author changes `profileVisibility`: their posts and works take the new audience. */
    onProfileVisibilityChanged: (...args: Parameters<typeof posts.setAuthorVisibility>) => posts.setAuthorVisibility(...args),
    /** The account module's block hook (see `UserBlockedHook`). */
    onUserBlocked: async (...args: Parameters<typeof social.dropFollowsBetween>) => void (await social.dropFollowsBetween(...args)),
    /** The account module's deletion hook: the account's posts and works are hidden and its follows dropped. */
    async onAccountDeleted(tx: Tx, userId: string, at: Date): Promise<void> {
      await posts.hideAllOf(tx, userId, at);
      await works.hideAllOf(tx, userId, at);
      await social.dropAllFollowsOf(tx, userId);
    },
    jobs: () => communityJobs(feeds),
  };
}

export type CommunityService = ReturnType<typeof createCommunityService>;
