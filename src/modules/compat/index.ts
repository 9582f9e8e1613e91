/** The compat module's public entry: its service and OpenAI's error schema (app.ts registers the routes from openai.routes.ts). */
export { createCompatService, type CompatService } from './service.js';
export { OpenAiError } from './openai.schemas.js';
