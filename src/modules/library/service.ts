import type { GenerationVisibility } from '../../db/schema/library.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { createGenerations, type GenerationsDeps } from './generations.js';
import { createPromptTemplates } from './prompts.js';

export type { Generation, GenerationView, SaveGenerationInput } from './generations.js';
export type { PromptTemplateView } from './prompts.js';
/** The library listing's schemas, for surfaces that list generations (the admin playground). */
export { GenerationsPage, GenerationsQuery, LIBRARY_LIMITS } from './schemas.js';

export interface LibraryServiceDeps {
  db: Db;
  clock: Clock;
  catalog: GenerationsDeps['catalog'];
  /** The owner's preferences (the account service); read inside the caller's transaction when saving in one. */
  preferences: { defaultGenerationVisibility(userId: string, tx: DbOrTx): Promise<GenerationVisibility> };
}

/** The caller's library: their generations (media library and text history) and saved prompt templates. */
export function createLibraryService(deps: LibraryServiceDeps) {
  const generations = createGenerations(deps);
  const prompts = createPromptTemplates(deps);
  return {
    saveGeneration: (...args: Parameters<typeof generations.saveGeneration>) => generations.saveGeneration(...args),
    saveGenerationParts: (...args: Parameters<typeof generations.saveGenerationParts>) => generations.saveGenerationParts(...args),
    generations,
    prompts,
    /** Seeds the system prompt templates (idempotent; runs at every start). */
    seed: () => prompts.seed(),
  };
}

export type LibraryService = ReturnType<typeof createLibraryService>;
