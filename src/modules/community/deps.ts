import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import type { Metrics } from '../../platform/metrics/metrics.js';
import type { AuthData } from '../auth/index.js';
import type { AuthorVisibility } from '../../db/schema/community.js';
import type { GenerationVisibility } from '../../db/schema/library.js';
import type { Generation, GenerationView } from '../library/service.js';
import type { NotificationsService } from '../notifications/service.js';

/** What the community service is built from (see `createCommunityService`). */
export interface CommunityServiceDeps {
  db: Db;
  clock: Clock;
  /** Users (authors, profiles, handles): the auth module's data API. */
  users: Pick<AuthData['users'], 'findActiveById' | 'findActiveByHandle' | 'publicProfilesOf'>;
  /** The library: the generation a post is made of. */
  generations: {
    ownRow(userId: string, id: string): Promise<Generation>;
    viewsOf(ids: string[], tx?: DbOrTx): Promise<Map<string, GenerationView>>;
    setVisibility(userId: string, id: string, visibility: GenerationVisibility, tx?: DbOrTx): Promise<void>;
  };
  /** Blocks and mutes (the account module). */
  blocks: {
    hiddenUserIds(viewerId: string, tx?: DbOrTx): Promise<string[]>;
    blockedEitherWay(tx: DbOrTx, a: string, b: string): Promise<boolean>;
  };
  /** Who sees an author's profile and posts: their `profileVisibility` preference (the account module's profile). */
  audience: {
    visibilityOf(userId: string, tx?: DbOrTx): Promise<AuthorVisibility>;
    /** Read in the publishing transaction, held until it ends: a concurrent change waits, then updates the new post too. */
    holdVisibility(tx: Tx, userId: string): Promise<AuthorVisibility>;
  };
  notifications: Pick<NotificationsService, 'notify'>;
  /** The web app's address: share links point there. */
  frontendUrl: string;
  /** Tells every instance when the trending epoch moves (each keeps the current one); without it, this instance only. */
  events?: EventBus;
  /** Where the trending recompute reports its duration; a private registry when absent. */
  metrics?: Metrics;
}

export type CommunityDeps = CommunityServiceDeps;

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
