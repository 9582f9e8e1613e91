import type { Static } from 'typebox';
import type { DescribedError } from '../../platform/http/error-handler.js';
import type {
  ReasoningEffort,
  ReasoningOption,
  ResponseFormat,
  TextAnswerBody,
  TextBody,
  ThinkingBlock,
  ToolCall,
  ToolChoice,
  ToolDefinition,
} from '../gateway/index.js';
import { refuse } from './anthropic.content.js';
import { systemMessage, toChatMessages } from './gemini.content.js';
import { jsonSchemaOf } from './gemini.json-schema.js';
import type { GenerateContentBody, GenerateContentResponse } from './gemini.schemas.js';
import { thoughtSignatureOf } from './gemini.signature.js';

/**
 * Google's Gemini API (https://ai.google.dev/api/generate-content; shapes as in `@google/genai` 2.32.0) to and from
 * the gateway's text call.
 */

export type GenerateContentRequest = Static<typeof GenerateContentBody>;
type GenerationConfig = NonNullable<GenerateContentRequest['generationConfig']>;

/** Fields taken and left out of the upstream call; the answer names those the request set (`x-storefront-ignored`). */
export function ignoredFields(body: GenerateContentRequest): string[] {
  return body.safetySettings !== undefined ? ['safetySettings'] : [];
}

/**
 * A generateContent request as the gateway's text call: the system instruction first, the contents as they are (no
 * server instruction), the parameters under the gateway's names. What cannot be honoured is refused with a 400.
 */
export function toTextBody(model: string, body: GenerateContentRequest): TextBody {
  const config = body.generationConfig ?? {};
  if (body.cachedContent !== undefined)
    refuse('cachedContent', 'is not supported: this service keeps no Gemini cached contents. Send the contents themselves.');
  if (config.candidateCount !== undefined && config.candidateCount !== 1)
    refuse('generationConfig.candidateCount', 'must be 1: this service answers with one candidate.');
  const system = systemMessage(body.systemInstruction);
  const tools = toolsOf(body.tools);
  const reasoning = reasoningOf(config.thinkingConfig);
  return {
    model,
    messages: [...(system ? [system] : []), ...toChatMessages(body.contents)],
    maxTokens: config.maxOutputTokens,
    ...(reasoning ? { reasoning, reasoningField: 'generationConfig.thinkingConfig' } : {}),
    serverInstruction: false,
    // Left undefined when not sent: the gateway passes on (and checks against the provider) only the ones set.
    temperature: config.temperature,
    topP: config.topP,
    topK: config.topK,
    stop: config.stopSequences?.length ? config.stopSequences : undefined,
    seed: config.seed,
    presencePenalty: config.presencePenalty,
    frequencyPenalty: config.frequencyPenalty,
    ...toolChoiceOf(body.toolConfig?.functionCallingConfig, tools),
    responseFormat: responseFormatOf(config),
  };
}

/** Anthropic's smallest thinking budget (the gateway refuses less on a budget model; reasoning.ts). */
const MIN_THINKING_BUDGET = 1024;

const LEVELS: Record<string, ReasoningEffort> = { MINIMAL: 'minimal', LOW: 'low', MEDIUM: 'medium', HIGH: 'high' };

/**
 * `thinkingConfig` as the gateway's reasoning control: `thinkingBudget` 0 is off (effort none), -1 dynamic (effort
 * medium, the gateway's default level), a positive budget that budget (raised to Anthropic's smallest, 1024, since
 * a budget model takes no less); without a budget, `thinkingLevel` as the effort. `includeThoughts` alone asks for nothing.
 */
export function reasoningOf(thinking: GenerationConfig['thinkingConfig']): ReasoningOption | undefined {
  const budget = thinking?.thinkingBudget;
  if (budget === 0) return { effort: 'none' };
  if (budget === -1) return { effort: 'medium' };
  if (budget !== undefined) return { budgetTokens: Math.max(budget, MIN_THINKING_BUDGET) };
  const level = thinking?.thinkingLevel;
  if (level === undefined) return undefined;
  const effort = LEVELS[level.toUpperCase()];
  if (!effort) refuse('generationConfig.thinkingConfig.thinkingLevel', `is "${level}"; it is MINIMAL, LOW, MEDIUM or HIGH.`);
  return { effort };
}

/** Whether the answer shows its thinking (parts with `thought: true`). */
export const includesThoughts = (body: GenerateContentRequest) => body.generationConfig?.thinkingConfig?.includeThoughts === true;

/** A thinking block as a thought part (a redacted block has no text to show and is left out). */
export const thoughtParts = (blocks: readonly ThinkingBlock[] | undefined) =>
  (blocks ?? []).flatMap((block) => (block.type === 'thinking' && block.thinking ? [{ text: block.thinking, thought: true }] : []));

function toolsOf(tools: GenerateContentRequest['tools']): ToolDefinition[] | undefined {
  const names = new Set<string>();
  const out: ToolDefinition[] = [];
  tools?.forEach((tool, i) => {
    const other = Object.keys(tool).find((key) => key !== 'functionDeclarations');
    if (other)
      refuse(
        `tools.${i}.${other}`,
        `is a Google-side tool, which this service does not run; declare your own functions in functionDeclarations and run them yourself.`,
      );
    tool.functionDeclarations?.forEach((fn, j) => {
      const at = `tools.${i}.functionDeclarations.${j}`;
      if (names.has(fn.name)) refuse(`${at}.name`, `repeats the function name "${fn.name}"; function names must be unique.`);
      names.add(fn.name);
      const parameters = fn.parametersJsonSchema ?? (fn.parameters ? jsonSchemaOf(fn.parameters) : { type: 'object', properties: {} });
      out.push({ name: fn.name, parameters: parameters as Record<string, unknown>, ...(fn.description ? { description: fn.description } : {}) });
    });
  });
  return out.length ? out : undefined;
}

type FunctionCallingConfig = NonNullable<NonNullable<GenerateContentRequest['toolConfig']>['functionCallingConfig']>;

/** AUTO is what the gateway does with tools; ANY is `required`, narrowed to `allowedFunctionNames` by offering only those. */
function toolChoiceOf(config: FunctionCallingConfig | undefined, tools: ToolDefinition[] | undefined): { tools?: ToolDefinition[]; toolChoice?: ToolChoice } {
  const mode = (config?.mode ?? 'AUTO').toUpperCase();
  if (mode === 'AUTO' || mode === 'MODE_UNSPECIFIED' || mode === 'VALIDATED') return { tools };
  if (mode === 'NONE') return tools ? { tools, toolChoice: 'none' } : {};
  if (mode !== 'ANY') refuse('toolConfig.functionCallingConfig.mode', `is "${config?.mode}"; it is AUTO, ANY or NONE.`);
  if (!tools) refuse('toolConfig.functionCallingConfig.mode', 'is ANY but the request declares no functions; add them to tools.');
  const allowed = config?.allowedFunctionNames;
  if (!allowed?.length) return { tools, toolChoice: 'required' };
  for (const name of allowed) {
    if (!tools.some((tool) => tool.name === name))
      refuse('toolConfig.functionCallingConfig.allowedFunctionNames', `names "${name}", which is not one of the request's functions.`);
  }
  const offered = tools.filter((tool) => allowed.includes(tool.name));
  return { tools: offered, toolChoice: offered.length === 1 ? { name: offered[0]!.name } : 'required' };
}

function responseFormatOf(config: GenerationConfig): ResponseFormat | undefined {
  const mime = config.responseMimeType;
  const schema = config.responseJsonSchema ?? (config.responseSchema !== undefined ? jsonSchemaOf(config.responseSchema) : undefined);
  if (mime === undefined || mime === 'text/plain') {
    if (schema !== undefined) refuse('generationConfig.responseMimeType', 'must be application/json when a response schema is set.');
    return undefined;
  }
  if (mime !== 'application/json') refuse('generationConfig.responseMimeType', `is "${mime}"; this service answers text/plain or application/json.`);
  if (schema === undefined) return { type: 'json_object' };
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) refuse('generationConfig.responseJsonSchema', 'must be a JSON schema object.');
  return { type: 'json_schema', name: 'response', schema: schema as Record<string, unknown> };
}

/** Gemini's finish reason for the gateway's (a function call ends with STOP, as Gemini's own do). */
export function finishReasonOf(finishReason: string | undefined): string {
  if (finishReason === 'length') return 'MAX_TOKENS';
  if (finishReason === 'content_filter') return 'SAFETY';
  return 'STOP';
}

/** The billed usage in Gemini's shape: thinking is counted apart from the candidates, as Gemini counts it. */
export function usageMetadataOf(answer: TextAnswerBody) {
  const { inputTokens, outputTokens, cachedInputTokens = 0, reasoningTokens = 0, creditsConsumed } = answer.usage;
  return {
    promptTokenCount: inputTokens,
    candidatesTokenCount: Math.max(0, outputTokens - reasoningTokens),
    ...(reasoningTokens ? { thoughtsTokenCount: reasoningTokens } : {}),
    ...(cachedInputTokens ? { cachedContentTokenCount: cachedInputTokens } : {}),
    totalTokenCount: inputTokens + outputTokens,
    tokensCharged: creditsConsumed,
  };
}

/** A tool call as a `functionCall` part; arguments that are not a JSON object (a model's broken JSON) give `args: {}`. */
export function functionCallPart(call: ToolCall) {
  const args = parseArguments(call.arguments);
  return { functionCall: { name: call.name, args: typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {}, id: call.id } };
}

function parseArguments(text: string): unknown {
  try {
    return text.trim() ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}

/**
 * `parts` with the turn's thought signature where Gemini puts it: on the first function call, else on the last part.
 * Never on a thought part: Gemini CLI drops those from the history it sends back.
 */
export function signedParts<P extends object>(parts: P[], signature: string | undefined): (P & { thoughtSignature?: string })[] {
  if (!signature || parts.length === 0) return parts;
  const call = parts.findIndex((part) => 'functionCall' in part);
  const at = call >= 0 ? call : parts.length - 1;
  return parts.map((part, i) => (i === at ? { ...part, thoughtSignature: signature } : part));
}

/**
 * A refusal (OpenAI's `refusal`) is the model's text on this surface: Gemini has no refusal field, and its own models
 * refuse in plain text with `STOP`, which is what Gemini's clients show.
 */
export function toGenerateContentResponse(answer: TextAnswerBody, options: { includeThoughts?: boolean } = {}): Static<typeof GenerateContentResponse> {
  const calls = answer.toolCalls ?? [];
  const thoughts = options.includeThoughts ? thoughtParts(answer.thinking) : [];
  const text = answer.text + (answer.refusal ?? '');
  const said = [...(text || calls.length === 0 ? [{ text }] : []), ...calls.map(functionCallPart)];
  const parts = [...thoughts, ...signedParts<object>(said, thoughtSignatureOf(answer.thinking))];
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: finishReasonOf(answer.finishReason), index: 0 }],
    usageMetadata: usageMetadataOf(answer),
    modelVersion: answer.model,
    responseId: answer.requestId,
  };
}

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'RESOURCE_EXHAUSTED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Google's status name for one of our HTTP statuses. */
export const geminiStatus = (status: number) => STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');

/** A gateway error (same HTTP status) in Google's shape. */
export const toGeminiError = (error: DescribedError) => ({ error: { code: error.status, message: error.message, status: geminiStatus(error.status) } });
