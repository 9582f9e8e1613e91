import { asc } from 'drizzle-orm';
import { topUpComponents, topUpRules, topUpSettings } from '../../db/schema/topup.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { DEFAULT_COMPONENTS, RULE_TEMPLATES } from './engine/defaults.js';
import type { EngineRule, RuleConditions } from './engine/types.js';

export type ComponentRow = typeof topUpComponents.$inferSelect;
export type RuleRow = typeof topUpRules.$inferSelect;
export type SettingsRow = typeof topUpSettings.$inferSelect;

/**
 * Tokens per unit of the model-usage bundles until an operator sets them (all are off by default), from typical
 * provider costs at the default token value (1,000,000 tokens per 18 BDT): an image ≈ US$0.02, a 5-second clip
 * ≈ US$0.25, 1,000 characters read aloud ≈ US$0.015, a chat reply ≈ US$0.001.
 */
export const DEFAULT_TOKENS_PER_UNIT: Record<string, number> = { images: 135_600, videos: 1_694_500, speech: 101_700, chat: 6_800 };

/** Default components, the four rule templates (switched off) and the settings row; existing rows are left alone. */
export async function seedTopUp(db: DbOrTx, now: Date): Promise<void> {
  await db
    .insert(topUpComponents)
    .values(
      DEFAULT_COMPONENTS.map((c, i) => ({
        ...c,
        tokensPerUnit: c.kind === 'CREDITS' ? null : (DEFAULT_TOKENS_PER_UNIT[c.key] ?? null),
        sortOrder: i,
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoNothing();
  await db
    .insert(topUpRules)
    .values(
      RULE_TEMPLATES.map(({ key, group, ...rule }) => ({
        ...rule,
        conditions: { ...rule.conditions },
        template: key,
        ruleGroup: group,
        active: false,
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoNothing();
  await db.insert(topUpSettings).values({ id: 'default', updatedAt: now }).onConflictDoNothing();
}

export async function loadComponents(db: DbOrTx): Promise<ComponentRow[]> {
  return db.select().from(topUpComponents).orderBy(asc(topUpComponents.sortOrder), asc(topUpComponents.key));
}

export async function loadRules(db: DbOrTx): Promise<RuleRow[]> {
  return db.select().from(topUpRules).orderBy(asc(topUpRules.id));
}

export async function loadSettings(db: DbOrTx): Promise<SettingsRow> {
  const [row] = await db.select().from(topUpSettings);
  if (!row) throw new Error('top-up settings are missing: run the seed');
  return row;
}

const dateOrNull = (value: unknown): Date | null => (typeof value === 'string' ? new Date(value) : null);

/** A stored rule for the engine (dates in `conditions` are ISO strings in the database). */
export function toEngineRule(row: RuleRow): EngineRule {
  const { startsAt, endsAt, ...rest } = row.conditions;
  const conditions: RuleConditions = { ...(rest as RuleConditions), startsAt: dateOrNull(startsAt), endsAt: dateOrNull(endsAt) };
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type,
    active: row.active,
    priority: row.priority,
    group: row.ruleGroup,
    effect: row.effect,
    conditions,
  };
}
