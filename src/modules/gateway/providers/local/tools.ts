import { createHash } from 'node:crypto';
import { keywords } from './answers.js';
import { promptFacts } from './prompt-facts.js';
import { schemaInstance } from './schema.js';
import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from '../types.js';

/**
 * Tool calling of the built-in model: which tool it calls (the named one, or the one whose name and description share
 * the most words with the prompt; the first on a tie) and arguments that validate against the tool's schema.
 */

/** Three-letter words too common to tell tools apart (longer ones are filtered by `keywords`). */
const SHORT_STOP_WORDS = new Set(['the', 'and', 'for', 'you', 'are', 'was', 'can', 'how', 'but', 'not', 'its', 'our', 'any', 'all', 'who', 'why', 'use']);

/** A tool's words: its name split at `_`, `-`, `.` and camelCase (counted twice), and its description's words. */
function toolScore(tool: ToolDefinition, promptWords: ReadonlySet<string>): number {
  const nameWords = tool.name
    .replace(/([a-z\d])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .map(stem);
  const descriptionWords = (tool.description ?? '').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  let score = 0;
  for (const word of new Set(nameWords)) if (promptWords.has(word)) score += 2;
  for (const word of new Set(descriptionWords.map(stem))) if (promptWords.has(word)) score += 1;
  return score;
}

/** Plural and verb endings off, so "cities" meets "city" and "searching" meets "search". */
function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** The tool to call, or undefined when the model answers in text (no tools, or toolChoice `none`). */
export function chooseTool(tools: readonly ToolDefinition[] | undefined, choice: ToolChoice | undefined, prompt: string): ToolDefinition | undefined {
  if (!tools || tools.length === 0 || choice === 'none') return undefined;
  if (typeof choice === 'object') return tools.find((tool) => tool.name === choice.name);
  const words = new Set(keywords(prompt, 64).map(stem));
  for (const word of prompt.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) if (word.length === 3 && !SHORT_STOP_WORDS.has(word)) words.add(word);
  let best = tools[0]!;
  let bestScore = toolScore(best, words);
  for (const tool of tools.slice(1)) {
    const score = toolScore(tool, words);
    if (score > bestScore) [best, bestScore] = [tool, score];
  }
  return best;
}

/** The call of `tool`: arguments from its schema and the prompt, and an id hashed from the conversation. */
export function toolCallFor(tool: ToolDefinition, prompt: string, model: string, messages: readonly ChatMessage[], seed?: number): ToolCall {
  const args = JSON.stringify(schemaInstance(tool.parameters, promptFacts(prompt)));
  const digest = createHash('sha256')
    .update(`${model}\u0000${JSON.stringify(messages)}\u0000${seed ?? ''}\u0000${tool.name}\u0000${args}`)
    .digest('base64url')
    .replace(/[-_]/g, '')
    .slice(0, 22);
  return { id: `call_${digest}`, name: tool.name, arguments: args };
}
