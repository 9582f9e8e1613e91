import { and, desc, eq, isNull, or, sql, type SQL } from 'drizzle-orm';
import { promptTemplates, type GenerationKind, type PromptVariable } from '../../db/schema/library.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import { SYSTEM_PROMPT_TEMPLATES } from './prompt-seed.js';
import { normaliseTags } from './tags.js';

type TemplateRow = typeof promptTemplates.$inferSelect;

/** A saved prompt template as clients see it; `isSystem` marks the shared templates nobody can edit. */
export interface PromptTemplateView {
  id: string;
  kind: GenerationKind;
  title: string;
  body: string;
  variables: PromptVariable[];
  tags: string[];
  usageCount: number;
  isSystem: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface PromptTemplateInput {
  kind: GenerationKind;
  title: string;
  body: string;
  variables?: PromptVariable[];
  tags?: string[];
}

export type PromptTemplateChanges = Partial<PromptTemplateInput>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const toTemplateView = (row: TemplateRow): PromptTemplateView => ({
  id: row.id,
  kind: row.kind,
  title: row.title,
  body: row.body,
  variables: row.variables,
  tags: row.tags,
  usageCount: row.usageCount,
  isSystem: row.userId === null,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const notYours = () => notFound('No such prompt template among yours. System templates cannot be changed; save a copy instead.');

/** Checks what a schema cannot: non-blank text, unique variable names, options exactly on `select` variables. */
function checkedVariables(variables: PromptVariable[]): PromptVariable[] {
  const names = new Set<string>();
  return variables.map((variable, index) => {
    const field = `variables[${index}]`;
    if (names.has(variable.name)) throw badRequest(`Two variables are named "${variable.name}"; each variable needs its own name.`, { field: `${field}.name` });
    names.add(variable.name);
    const label = variable.label.trim();
    if (!label) throw badRequest(`The variable "${variable.name}" needs a label.`, { field: `${field}.label` });
    if (variable.type === 'select') {
      const options = [...new Set((variable.options ?? []).map((o) => o.trim()).filter(Boolean))];
      if (options.length === 0) throw badRequest(`The select variable "${variable.name}" needs at least one option.`, { field: `${field}.options` });
      return { name: variable.name, label, type: variable.type, options };
    }
    if (variable.options !== undefined) {
      throw badRequest(`Only select variables take options; "${variable.name}" is a ${variable.type} variable.`, { field: `${field}.options` });
    }
    return { name: variable.name, label, type: variable.type };
  });
}

function checkedText(value: string, field: 'title' | 'body'): string {
  const trimmed = field === 'title' ? value.trim() : value;
  if (!trimmed.trim()) throw badRequest(`The ${field} cannot be blank.`, { field });
  return trimmed;
}

/** Prompt templates: the caller's own plus the system templates shared with every user. */
export function createPromptTemplates(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function ownRow(userId: string, id: string): Promise<TemplateRow> {
    if (!UUID.test(id)) throw notYours();
    const [row] = await db
      .select()
      .from(promptTemplates)
      .where(and(eq(promptTemplates.id, id), eq(promptTemplates.userId, userId)));
    if (!row) throw notYours();
    return row;
  }

  return {
    /** Newest-updated first; system templates included unless `includeTemplates` is false. */
    async list(userId: string, query: { kind?: GenerationKind; includeTemplates?: boolean }): Promise<PromptTemplateView[]> {
      const owner: SQL =
        query.includeTemplates === false ? eq(promptTemplates.userId, userId) : or(eq(promptTemplates.userId, userId), isNull(promptTemplates.userId))!;
      const rows = await db
        .select()
        .from(promptTemplates)
        .where(and(owner, query.kind ? eq(promptTemplates.kind, query.kind) : undefined))
        .orderBy(desc(promptTemplates.updatedAt), desc(promptTemplates.id));
      return rows.map(toTemplateView);
    },

    async create(userId: string, input: PromptTemplateInput): Promise<PromptTemplateView> {
      const now = clock.now();
      const [row] = await db
        .insert(promptTemplates)
        .values({
          userId,
          kind: input.kind,
          title: checkedText(input.title, 'title'),
          body: checkedText(input.body, 'body'),
          variables: checkedVariables(input.variables ?? []),
          tags: normaliseTags(input.tags ?? []),
          createdAt: now,
          updatedAt: now,
        })
        .returning();
      return toTemplateView(row!);
    },

    /** Changes any subset of the caller's own template; system templates and other users' answer 404. */
    async update(userId: string, id: string, changes: PromptTemplateChanges): Promise<PromptTemplateView> {
      const current = await ownRow(userId, id);
      const set: Partial<typeof promptTemplates.$inferInsert> = {};
      if (changes.kind !== undefined) set.kind = changes.kind;
      if (changes.title !== undefined) set.title = checkedText(changes.title, 'title');
      if (changes.body !== undefined) set.body = checkedText(changes.body, 'body');
      if (changes.variables !== undefined) set.variables = checkedVariables(changes.variables);
      if (changes.tags !== undefined) set.tags = normaliseTags(changes.tags);
      if (Object.keys(set).length === 0) return toTemplateView(current);
      const [row] = await db
        .update(promptTemplates)
        .set({ ...set, updatedAt: clock.now() })
        .where(and(eq(promptTemplates.id, id), eq(promptTemplates.userId, userId)))
        .returning();
      return toTemplateView(row!);
    },

    /** Counts one use of a template the caller can see (their own or a system one); does not reorder the list. */
    async use(userId: string, id: string): Promise<void> {
      if (!UUID.test(id)) throw notFound('No such prompt template.');
      const updated = await db
        .update(promptTemplates)
        .set({ usageCount: sql`${promptTemplates.usageCount} + 1` })
        .where(and(eq(promptTemplates.id, id), or(eq(promptTemplates.userId, userId), isNull(promptTemplates.userId))))
        .returning({ id: promptTemplates.id });
      if (updated.length === 0) throw notFound('No such prompt template.');
    },

    /**
     * Writes the built-in system templates: new ones are added, changed ones updated (usage counts kept),
     * unchanged ones left alone. One statement, safe to run at every start and on several instances at once.
     */
    async seed(): Promise<void> {
      const now = clock.now();
      await db
        .insert(promptTemplates)
        .values(SYSTEM_PROMPT_TEMPLATES.map((t) => ({ ...t, userId: null, createdAt: now, updatedAt: now })))
        .onConflictDoUpdate({
          target: promptTemplates.systemKey,
          set: {
            kind: sql`excluded.kind`,
            title: sql`excluded.title`,
            body: sql`excluded.body`,
            variables: sql`excluded.variables`,
            tags: sql`excluded.tags`,
            updatedAt: now,
          },
          setWhere: sql`(${promptTemplates.kind}, ${promptTemplates.title}, ${promptTemplates.body}, ${promptTemplates.variables}, ${promptTemplates.tags})
            is distinct from (excluded.kind, excluded.title, excluded.body, excluded.variables, excluded.tags)`,
        });
    },
  };
}

export type PromptTemplates = ReturnType<typeof createPromptTemplates>;
