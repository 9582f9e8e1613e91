import { sql } from 'drizzle-orm';
import { Value } from 'typebox/value';
import { communityWorks, type WorkContentType, type WorkType } from '../../db/schema/community.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest } from '../../platform/http/errors.js';
import { ImportFeedSchema } from './schemas.js';
import { WRAPPER_KEY } from './works.js';

/** One work of an external feed, validated and unwrapped. */
export interface ImportedWork {
  type: WorkType;
  externalId: string;
  workId: number;
  contentType: WorkContentType;
  resource: { resource: string; width?: number | null; height?: number | null; duration?: number | null };
  cover?: { resource: string } | null;
  starNum?: number;
  userProfile: { userId: string | number; userName: string; userAvatar?: string[] };
  createTime?: string;
}

const toColumn = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Reads an external feed: `{ items: [work envelope] }`, each envelope `{ type, <wrapper>: { workId, contentType,
 * resource, cover?, starNum?, userProfile, createTime?, externalId? } }` as the gallery serves it. `externalId`
 * defaults to the `workId`. Throws 400 naming the first problems.
 */
export function parseFeed(feed: unknown): ImportedWork[] {
  if (!Value.Check(ImportFeedSchema, feed)) {
    const issues = [...Value.Errors(ImportFeedSchema, feed)].slice(0, 5).map((e) => `${e.instancePath || '/'}: ${e.message}`);
    throw badRequest(`The feed is not valid: ${issues.join('; ')}`, { issues });
  }
  return feed.items.map((envelope, index) => {
    const inner = envelope[WRAPPER_KEY[envelope.type]];
    if (!inner) throw badRequest(`Item ${index} has type ${envelope.type} but no "${WRAPPER_KEY[envelope.type]}" object.`);
    if (inner.createTime !== undefined && Number.isNaN(Date.parse(inner.createTime))) throw badRequest(`Item ${index} has an unreadable createTime.`);
    return { ...inner, type: envelope.type, externalId: inner.externalId ?? String(inner.workId) };
  });
}

/** The gallery's import of external works (the `import-works` script and the service). */
export function createWorkImporter(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  /**
   * Loads works, idempotent by `externalId`: a new work is inserted, a changed one updated, an unchanged one left
   * alone (running the same feed twice writes nothing the second time). Local likes and views are never touched.
   * One transaction: a feed is loaded whole or not at all.
   */
  async function importWorks(items: ImportedWork[]): Promise<{ inserted: number; updated: number; unchanged: number }> {
    const now = clock.now();
    let inserted = 0;
    let updated = 0;
    await db.transaction(async (tx) => {
      for (const item of items) {
        const fields = {
          type: item.type,
          workId: item.workId,
          contentType: item.contentType,
          resourceUrl: item.resource.resource,
          width: item.resource.width ?? null,
          height: item.resource.height ?? null,
          durationMs: item.resource.duration ?? null,
          coverUrl: item.cover?.resource ?? null,
          authorExternalId: String(item.userProfile.userId),
          authorName: item.userProfile.userName,
          authorAvatarUrl: item.userProfile.userAvatar?.[0] ?? null,
          sourceLikeCount: item.starNum ?? 0,
        };
        const columns = Object.keys(fields).map(toColumn);
        const changed = sql.join(
          columns.map((c) => sql`${sql.identifier('community_works')}.${sql.identifier(c)} is distinct from excluded.${sql.identifier(c)}`),
          sql` or `,
        );
        const rows = await tx
          .insert(communityWorks)
          .values({
            source: 'IMPORTED',
            externalId: item.externalId,
            ...fields,
            publishedAt: item.createTime ? new Date(item.createTime) : now,
            updatedAt: now,
          })
          .onConflictDoUpdate({
            target: communityWorks.externalId,
            targetWhere: sql`source = 'IMPORTED'`,
            set: { ...Object.fromEntries(Object.keys(fields).map((key) => [key, sql.raw(`excluded.${toColumn(key)}`)])), updatedAt: now },
            setWhere: sql`(${changed})`,
          })
          .returning({ inserted: sql<boolean>`(xmax = 0)` });
        if (rows[0]?.inserted) inserted++;
        else if (rows.length > 0) updated++;
      }
    });
    return { inserted, updated, unchanged: items.length - inserted - updated };
  }

  return {
    importWorks,
    /** Validates a feed document and imports it. */
    importFeed: async (feed: unknown) => importWorks(parseFeed(feed)),
  };
}
