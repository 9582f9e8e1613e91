import { and, asc, desc, eq, type SQL } from 'drizzle-orm';
import { topUpComponents, topUpOrders, topUpRules, topUpSettings, type ComponentPricing, type RuleEffect } from '../../db/schema/topup.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import { afterCursor, encodeCursor } from '../../platform/http/pagination.js';
import type { AuditWriter } from '../audit/service.js';
import type { RuleConditions } from './engine/index.js';
import { loadComponents, loadRules, loadSettings, type ComponentRow, type RuleRow, type SettingsRow } from './store.js';
import { orderViewOf, type OrderRow, type PaymentSummary } from './orders.js';

/** An effect as the admin schema lets it in: one object, the fields its `type` needs checked by `effectOf`. */
export interface EffectInput {
  type: RuleEffect['type'];
  component?: string | undefined;
  units?: number | undefined;
  percent?: number | undefined;
  maxDiscountCents?: number | null | undefined;
  amountCents?: number | undefined;
}

/** A rule's definition as operators write it (`POST` and `PUT /v1/admin/topup/rules`). */
export interface RuleInput {
  name: string;
  description?: string | undefined;
  type: 'BONUS' | 'PROMOTION';
  priority?: number | undefined;
  group?: string | null | undefined;
  effect: EffectInput;
  conditions?: Omit<RuleConditions, 'startsAt' | 'endsAt'> & { startsAt?: string | null; endsAt?: string | null };
}

export interface ComponentPatch {
  name?: string | undefined;
  description?: string | undefined;
  enabled?: boolean | undefined;
  minUnits?: number | undefined;
  maxUnits?: number | undefined;
  step?: number | undefined;
  defaultUnits?: number | undefined;
  tokensPerUnit?: number | undefined;
  pricing?: ComponentPricing | undefined;
}

export type SettingsPatch = Partial<Omit<SettingsRow, 'id' | 'updatedAt'>>;

export interface AdminOrdersQuery {
  limit: number;
  cursor?: string | undefined;
  status?: string | undefined;
  userId?: string | undefined;
}

/** Orders scanned at most per page when filtering by status (the status is the payment's, kept by payments). */
const STATUS_SCAN_LIMIT = 1_000;

export const ruleView = (row: RuleRow) => ({
  id: row.id,
  template: row.template,
  name: row.name,
  description: row.description,
  type: row.type,
  active: row.active,
  priority: row.priority,
  group: row.ruleGroup,
  effect: row.effect as unknown as Record<string, unknown>,
  conditions: row.conditions,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

export const componentView = (row: ComponentRow) => ({
  key: row.key,
  name: row.name,
  description: row.description,
  kind: row.kind,
  unit: row.unit,
  enabled: row.enabled,
  minUnits: row.minUnits,
  maxUnits: row.maxUnits,
  step: row.step,
  defaultUnits: row.defaultUnits,
  tokensPerUnit: row.tokensPerUnit,
  pricing: row.pricing as unknown as Record<string, unknown>,
  updatedAt: row.updatedAt.toISOString(),
});

export const settingsView = (row: SettingsRow) => {
  const { id: _id, updatedAt, ...rest } = row;
  return { ...rest, updatedAt: updatedAt.toISOString() };
};

const EFFECT_FIELDS: Record<RuleEffect['type'], { required: (keyof EffectInput)[]; optional: (keyof EffectInput)[] }> = {
  BONUS_UNITS: { required: ['component', 'units'], optional: [] },
  EXTRA_TOKENS_PERCENT: { required: ['percent'], optional: [] },
  PERCENT_OFF: { required: ['percent'], optional: ['maxDiscountCents'] },
  FIXED_OFF: { required: ['amountCents'], optional: [] },
};

/** The engine's effect from the admin's input: exactly the fields its type uses (400 naming the field otherwise). */
function effectOf(input: EffectInput): RuleEffect {
  const fields = EFFECT_FIELDS[input.type];
  for (const name of fields.required) {
    if (input[name] === undefined || input[name] === null)
      throw badRequest(`effect.${name} is required for a ${input.type} effect.`, { field: `effect.${name}` });
  }
  const foreign = (Object.keys(input) as (keyof EffectInput)[]).find(
    (k) => k !== 'type' && !fields.required.includes(k) && !fields.optional.includes(k) && input[k] !== undefined,
  );
  if (foreign)
    throw badRequest(`effect.${foreign} does not apply to a ${input.type} effect (it takes ${[...fields.required, ...fields.optional].join(', ')}).`, {
      field: `effect.${foreign}`,
    });
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as unknown as RuleEffect;
}

/** Checks a rule against what the engine can apply: known components, a date range that is one, an audience's days. */
function checkRule(input: RuleInput, componentKeys: Set<string>): void {
  const c = input.conditions ?? {};
  const effect = effectOf(input.effect);
  const unknown = (field: string, key: string) =>
    badRequest(`${field}: "${key}" is not a top-up component. Use one of: ${[...componentKeys].join(', ')}.`, { field });
  if (effect.type === 'BONUS_UNITS' && !componentKeys.has(effect.component)) throw unknown('effect.component', effect.component);
  if (c.minUnits && !componentKeys.has(c.minUnits.component)) throw unknown('conditions.minUnits.component', c.minUnits.component);
  if (c.startsAt && c.endsAt && new Date(c.startsAt) >= new Date(c.endsAt)) {
    throw badRequest('conditions.endsAt must be later than conditions.startsAt.', { field: 'conditions.endsAt' });
  }
  if (c.audience === 'NEW_ACCOUNT' && !c.newAccountDays) {
    throw badRequest('conditions.newAccountDays is required with audience NEW_ACCOUNT (accounts younger than that many days).', {
      field: 'conditions.newAccountDays',
    });
  }
  if (c.newAccountDays && c.audience !== 'NEW_ACCOUNT') {
    throw badRequest('conditions.newAccountDays applies only with audience NEW_ACCOUNT.', { field: 'conditions.newAccountDays' });
  }
}

/** Checks a component as it would be after the patch: units that are valid choices and a price the engine can use. */
function checkComponent(next: ComponentRow, patch: ComponentPatch): void {
  const field = (name: string, message: string) => badRequest(`${name}: ${message}`, { field: name });
  if (next.minUnits > next.maxUnits) throw field('minUnits', `must not exceed maxUnits (${next.minUnits} > ${next.maxUnits}).`);
  if (next.minUnits % next.step !== 0) throw field('minUnits', `must be a multiple of step ${next.step} (a unit count is a multiple of step).`);
  if (next.defaultUnits < next.minUnits || next.defaultUnits > next.maxUnits || next.defaultUnits % next.step !== 0) {
    throw field('defaultUnits', `must be a valid choice: ${next.minUnits}-${next.maxUnits} in steps of ${next.step} (got ${next.defaultUnits}).`);
  }
  if (patch.tokensPerUnit !== undefined && next.kind === 'CREDITS') {
    throw field('tokensPerUnit', 'credits are worth tokensPerCredit of the credit pricing (PUT /v1/admin/credits/pricing); it is not set per component.');
  }
  if (next.pricing.mode === 'TIERS') {
    const tiers = next.pricing.tiers;
    for (let i = 1; i < tiers.length; i++) {
      if (tiers[i]!.minUnits <= tiers[i - 1]!.minUnits)
        throw field(`pricing.tiers[${i}].minUnits`, 'tiers must be in ascending order of minUnits, without repeats.');
    }
    if (tiers[0]!.minUnits > next.minUnits)
      throw field(
        'pricing.tiers[0].minUnits',
        `the first tier must start at or below the component's minUnits (${next.minUnits}), so every choice has a price.`,
      );
  }
}

/** Checks the settings as they would be after the patch (the engine's price basis and limits). */
function checkSettings(next: SettingsRow): void {
  const bad = (name: string, message: string) => badRequest(`${name}: ${message}`, { field: name });
  const basis = next.gatewayFeeBp + next.vatBp + next.profitBp;
  if (basis >= 10_000)
    throw bad('profitBp', `gateway fee, VAT and profit must add up to less than 10,000 bp (100%) so part of the price pays for AI; they add up to ${basis}.`);
  if (next.profitFloorBp > next.profitBp)
    throw bad('profitFloorBp', `must not exceed profitBp (${next.profitBp}): a price from AI cost must itself meet the profit floor.`);
  if (next.minOrderCents > next.maxOrderCents) throw bad('minOrderCents', `must not exceed maxOrderCents (${next.minOrderCents} > ${next.maxOrderCents}).`);
  if (next.minOrderCents % next.roundToCents !== 0 || next.maxOrderCents % next.roundToCents !== 0) {
    throw bad(
      'roundToCents',
      `the order limits (${next.minOrderCents}, ${next.maxOrderCents}) must be multiples of the rounding step ${next.roundToCents}, as every amount is.`,
    );
  }
}

const changedOnly = <T extends Record<string, unknown>>(before: T, after: T) => {
  const keys = Object.keys(after).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
  return { before: Object.fromEntries(keys.map((k) => [k, before[k]])), after: Object.fromEntries(keys.map((k) => [k, after[k]])) };
};

/**
 * The operators' side of top-ups: rules, components, settings and the order list. Every change is written with its
 * audit row (who, when, before, after) in one transaction; `onChanged` runs after it commits (cached terms refresh).
 */
export function createTopUpAdmin(deps: {
  db: Db;
  clock: Clock;
  onChanged: () => Promise<void>;
  paymentSummaries: (ids: string[]) => Promise<Map<string, PaymentSummary>>;
}) {
  const { db, clock } = deps;

  async function change<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const result = await db.transaction(fn);
    await deps.onChanged();
    return result;
  }

  async function lockedRule(tx: Tx, id: string): Promise<RuleRow> {
    const [row] = await tx.select().from(topUpRules).where(eq(topUpRules.id, id)).for('update');
    if (!row) throw notFound('No top-up rule with this id. List the rules with GET /v1/admin/topup/rules.');
    return row;
  }

  const componentKeys = async (tx: Tx) => new Set((await loadComponents(tx)).map((c) => c.key));

  const ruleValues = (input: RuleInput) => ({
    name: input.name,
    description: input.description ?? '',
    type: input.type,
    priority: input.priority ?? 0,
    ruleGroup: input.group ?? null,
    effect: effectOf(input.effect),
    conditions: Object.fromEntries(Object.entries(input.conditions ?? {}).filter(([, v]) => v !== null && v !== undefined)),
  });

  return {
    async listRules() {
      return { items: (await loadRules(db)).map(ruleView) };
    },

    /** A new rule, always switched off (an operator switches it on with `setRuleActive` once it reads right). */
    createRule: (input: RuleInput, audit: AuditWriter) =>
      change(async (tx) => {
        checkRule(input, await componentKeys(tx));
        const now = clock.now();
        const [row] = await tx
          .insert(topUpRules)
          .values({ ...ruleValues(input), active: false, createdAt: now, updatedAt: now })
          .returning();
        const view = ruleView(row!);
        await audit({ action: 'topup.rule.create', targetType: 'topup_rule', targetId: row!.id, before: null, after: view }, tx);
        return view;
      }),

    /** Replaces a rule's definition (everything but `active`, which only `setRuleActive` changes). */
    replaceRule: (id: string, input: RuleInput, audit: AuditWriter) =>
      change(async (tx) => {
        const before = await lockedRule(tx, id);
        checkRule(input, await componentKeys(tx));
        const [row] = await tx
          .update(topUpRules)
          .set({ ...ruleValues(input), updatedAt: clock.now() })
          .where(eq(topUpRules.id, id))
          .returning();
        const view = ruleView(row!);
        await audit({ action: 'topup.rule.update', targetType: 'topup_rule', targetId: id, before: ruleView(before), after: view }, tx);
        return view;
      }),

    setRuleActive: (id: string, active: boolean, audit: AuditWriter) =>
      change(async (tx) => {
        const before = await lockedRule(tx, id);
        const [row] = await tx.update(topUpRules).set({ active, updatedAt: clock.now() }).where(eq(topUpRules.id, id)).returning();
        await audit(
          {
            action: active ? 'topup.rule.activate' : 'topup.rule.deactivate',
            targetType: 'topup_rule',
            targetId: id,
            before: { active: before.active },
            after: { active },
          },
          tx,
        );
        return ruleView(row!);
      }),

    async listComponents() {
      return { items: (await loadComponents(db)).map(componentView) };
    },

    updateComponent: (key: string, patch: ComponentPatch, audit: AuditWriter) =>
      change(async (tx) => {
        const [before] = await tx.select().from(topUpComponents).where(eq(topUpComponents.key, key)).for('update');
        if (!before) throw notFound(`No top-up component "${key}". List them with GET /v1/admin/topup/components.`);
        const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<ComponentRow>;
        const next: ComponentRow = { ...before, ...set };
        checkComponent(next, patch);
        const [row] = await tx
          .update(topUpComponents)
          .set({ ...set, updatedAt: clock.now() })
          .where(eq(topUpComponents.key, key))
          .returning();
        const diff = changedOnly(componentView(before), componentView(row!));
        await audit({ action: 'topup.component.update', targetType: 'topup_component', targetId: key, ...diff }, tx);
        return componentView(row!);
      }),

    async settings() {
      return settingsView(await loadSettings(db));
    },

    updateSettings: (patch: SettingsPatch, audit: AuditWriter) =>
      change(async (tx) => {
        const [before] = await tx.select().from(topUpSettings).for('update');
        if (!before) throw new Error('top-up settings are missing: run the seed');
        const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as SettingsPatch;
        const next: SettingsRow = { ...before, ...set };
        checkSettings(next);
        const [row] = await tx
          .update(topUpSettings)
          .set({ ...set, updatedAt: clock.now() })
          .where(eq(topUpSettings.id, before.id))
          .returning();
        const diff = changedOnly(settingsView(before), settingsView(row!));
        await audit({ action: 'topup.settings.update', targetType: 'topup_settings', targetId: before.id, ...diff }, tx);
        return settingsView(row!);
      }),

    /**
     * Recent orders, newest first, by anyone (or `userId`). An order's status is its payment's; filtering by it scans
     * at most STATUS_SCAN_LIMIT orders per page, so a page may hold fewer than `limit` items with a `nextCursor` to go on.
     */
    async listOrders(query: AdminOrdersQuery) {
      const items: ReturnType<typeof orderView>[] = [];
      let cursor = query.cursor;
      let scanned = 0;
      const batch = query.status ? Math.min(200, query.limit * 4) : query.limit + 1;
      for (;;) {
        const owner: SQL | undefined = query.userId ? eq(topUpOrders.userId, query.userId) : undefined;
        const rows = await db
          .select()
          .from(topUpOrders)
          .where(afterCursor(topUpOrders.createdAt, topUpOrders.id, cursor, owner ? and(owner) : undefined))
          .orderBy(desc(topUpOrders.createdAt), desc(topUpOrders.id))
          .limit(batch);
        const payments = await deps.paymentSummaries(rows.flatMap((r) => (r.paymentId ? [r.paymentId] : [])));
        for (const row of rows) {
          const view = orderView(row, row.paymentId ? (payments.get(row.paymentId) ?? null) : null);
          scanned++;
          cursor = encodeCursor({ sort: row.createdAt.toISOString(), id: row.id });
          if (query.status && view.status !== query.status) continue;
          if (items.length === query.limit) return { items, nextCursor: encodeCursor({ sort: items.at(-1)!.createdAt, id: items.at(-1)!.id }) };
          items.push(view);
        }
        if (rows.length < batch) return { items, nextCursor: null };
        if (scanned >= STATUS_SCAN_LIMIT) return { items, nextCursor: cursor ?? null };
      }
    },

    /** The credits component's unit terms (the suggested top-up rounds to them). */
    async creditsTerms(): Promise<{ minUnits: number; step: number } | null> {
      const [row] = await db
        .select({ minUnits: topUpComponents.minUnits, step: topUpComponents.step })
        .from(topUpComponents)
        .where(eq(topUpComponents.kind, 'CREDITS'))
        .orderBy(asc(topUpComponents.sortOrder))
        .limit(1);
      return row ?? null;
    },
  };
}

const orderView = (row: OrderRow, payment: PaymentSummary | null) => ({ ...orderViewOf(row, payment), userId: row.userId });

export type TopUpAdmin = ReturnType<typeof createTopUpAdmin>;
