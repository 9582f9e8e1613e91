import { Type } from 'typebox';
import { GENERATION_KINDS, GENERATION_VISIBILITIES, PROMPT_VARIABLE_TYPES } from '../../db/schema/library.js';
import { MODEL_TYPES } from '../catalog/service.js';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

/** Limits of spec A's Limits table, plus the house's own for what the spec leaves open (see docs/decisions.md). */
export const LIBRARY_LIMITS = {
  generationsDefault: 24,
  generationsMax: 100,
  searchMax: 200,
  tagMax: 40,
  tagsPerItem: 20,
  titleMax: 120,
  bodyMax: 8000,
  variablesMax: 30,
  variableNameMax: 40,
  variableLabelMax: 80,
  optionsMax: 50,
  optionMax: 100,
} as const;

export const GenerationKindSchema = Type.Enum([...GENERATION_KINDS]);

const Tag = Type.String({ minLength: 1, maxLength: LIBRARY_LIMITS.tagMax });
const Tags = Type.Array(Tag, { maxItems: LIBRARY_LIMITS.tagsPerItem });

export const GenerationSchema = Type.Object({
  id: Type.String(),
  kind: GenerationKindSchema,
  prompt: Type.String(),
  thumbnailUrl: Nullable(Type.String()),
  output: Type.Object(
    {},
    {
      additionalProperties: true,
      description: 'TEXT { text }; IMAGE { images: [{ url, mimeType }] }; VIDEO { videos: [{ url, durationSeconds }] }; AUDIO { audio: { url } }',
    },
  ),
  model: Nullable(Type.Object({ slug: Type.String(), displayName: Type.String(), type: Type.Enum([...MODEL_TYPES]) })),
  visibility: Type.Enum([...GENERATION_VISIBILITIES]),
  tags: Type.Array(Type.String()),
  favorite: Type.Boolean(),
  createdAt: DateTime,
});

export const GenerationsQuery = StrictObject({
  kind: Type.Optional(
    Type.Enum([...GENERATION_KINDS], { description: 'TEXT lists the text history; without kind every media kind is listed and TEXT is left out' }),
  ),
  favoritesOnly: Type.Optional(Type.Boolean({ default: false })),
  search: Type.Optional(Type.String({ maxLength: LIBRARY_LIMITS.searchMax, description: 'Text the prompt contains (case-insensitive)' })),
  tag: Type.Optional(Type.String({ maxLength: LIBRARY_LIMITS.tagMax, description: 'Only items carrying this tag (exact match)' })),
  ...pageQuery(LIBRARY_LIMITS.generationsDefault, LIBRARY_LIMITS.generationsMax),
});

export const GenerationsPage = Page(GenerationSchema);

export const GenerationPatch = StrictObject({
  favorite: Type.Optional(Type.Boolean()),
  tags: Type.Optional(Tags),
});

const VariableSchema = StrictObject({
  name: Type.String({
    minLength: 1,
    maxLength: LIBRARY_LIMITS.variableNameMax,
    pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
    description: 'Written {{name}} in the body',
  }),
  label: Type.String({ minLength: 1, maxLength: LIBRARY_LIMITS.variableLabelMax }),
  type: Type.Enum([...PROMPT_VARIABLE_TYPES]),
  options: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: LIBRARY_LIMITS.optionMax }), {
      maxItems: LIBRARY_LIMITS.optionsMax,
      description: 'The choices of a select variable (required for select, refused otherwise)',
    }),
  ),
});

const templateFields = {
  kind: GenerationKindSchema,
  title: Type.String({ minLength: 1, maxLength: LIBRARY_LIMITS.titleMax }),
  body: Type.String({ minLength: 1, maxLength: LIBRARY_LIMITS.bodyMax }),
  variables: Type.Array(VariableSchema, { maxItems: LIBRARY_LIMITS.variablesMax }),
  tags: Tags,
};

export const PromptTemplateCreate = StrictObject({
  kind: templateFields.kind,
  title: templateFields.title,
  body: templateFields.body,
  variables: Type.Optional(templateFields.variables),
  tags: Type.Optional(templateFields.tags),
});

export const PromptTemplatePatch = StrictObject({
  kind: Type.Optional(templateFields.kind),
  title: Type.Optional(templateFields.title),
  body: Type.Optional(templateFields.body),
  variables: Type.Optional(templateFields.variables),
  tags: Type.Optional(templateFields.tags),
});

export const PromptTemplateSchema = Type.Object({
  id: Type.String(),
  kind: GenerationKindSchema,
  title: Type.String(),
  body: Type.String(),
  variables: Type.Array(
    Type.Object({ name: Type.String(), label: Type.String(), type: Type.Enum([...PROMPT_VARIABLE_TYPES]), options: Type.Optional(Type.Array(Type.String())) }),
  ),
  tags: Type.Array(Type.String()),
  usageCount: Type.Integer(),
  isSystem: Type.Boolean({ description: 'A system template shared with every user (cannot be changed)' }),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const PromptTemplatesQuery = StrictObject({
  kind: Type.Optional(GenerationKindSchema),
  includeTemplates: Type.Optional(Type.Boolean({ default: true, description: 'Include the system templates shared with every user' })),
});

export const LibraryIdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 64 }) });
