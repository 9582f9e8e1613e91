/** The compat module's public entry: its services and the OpenAI, Anthropic and Gemini error schemas (app.ts registers the routes from the *.routes.ts files). */
export { createCompatService, type CompatService } from './service.js';
export { createResponsesService, type ResponsesService } from './responses.service.js';
export { OpenAiError } from './openai.schemas.js';
export { AnthropicError } from './anthropic.schemas.js';
export { GeminiError } from './gemini.schemas.js';
