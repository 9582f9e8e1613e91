import { Type } from 'typebox';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../gateway/index.js';

/**
 * Google's Gemini API shapes for `/gemini/v1beta`, after https://ai.google.dev/api/generate-content and the types of
 * `@google/genai` 2.32.0. Fields the SDK may add and this service ignores pass; fields it cannot honour are refused
 * with a 400 naming them (see `gemini.format.ts`). Parts are checked by kind in code, so a refusal names the part.
 */

/** Images travel inline as base64, as with the Anthropic surface. */
export const GEMINI_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

const Part = Type.Object(
  {
    text: Type.Optional(Type.String({ maxLength: MAX_MESSAGE_CHARS })),
    thought: Type.Optional(Type.Boolean({ description: 'A thought summary (model turns); dropped from the conversation' })),
    thoughtSignature: Type.Optional(
      Type.String({
        description:
          "A model turn's thinking as an earlier answer gave it: send it back unchanged (an edited one is refused with a 400; one made elsewhere is ignored)",
      }),
    ),
    inlineData: Type.Optional(
      Type.Object({ mimeType: Type.String({ maxLength: 100 }), data: Type.String() }, { description: 'An image as base64: PNG, JPEG, GIF or WebP' }),
    ),
    fileData: Type.Optional(
      Type.Object({ mimeType: Type.Optional(Type.String()), fileUri: Type.String({ maxLength: 8192 }) }, { description: 'An image at an https URL' }),
    ),
    functionCall: Type.Optional(
      Type.Object({
        name: Type.String({ minLength: 1, maxLength: 128 }),
        args: Type.Optional(Type.Unknown()),
        id: Type.Optional(Type.String({ maxLength: 256 })),
      }),
    ),
    functionResponse: Type.Optional(
      Type.Object({
        name: Type.String({ minLength: 1, maxLength: 128 }),
        response: Type.Optional(Type.Unknown()),
        id: Type.Optional(Type.String({ maxLength: 256 })),
      }),
    ),
  },
  { description: 'One part: text, inlineData, fileData, functionCall (model) or functionResponse (user); other kinds are refused with a 400' },
);

export const Content = Type.Object({
  role: Type.Optional(Type.String({ description: '`user` (default) or `model`' })),
  parts: Type.Array(Part, { maxItems: 100 }),
});

const FunctionDeclaration = Type.Object({
  name: Type.String({ pattern: '^[a-zA-Z0-9_.:-]{1,128}$' }),
  description: Type.Optional(Type.String({ maxLength: MAX_MESSAGE_CHARS })),
  parameters: Type.Optional(Type.Object({}, { description: "The arguments in Gemini's schema subset (types in upper or lower case)" })),
  parametersJsonSchema: Type.Optional(Type.Object({}, { description: 'The arguments as a JSON schema' })),
});

const Tool = Type.Object(
  { functionDeclarations: Type.Optional(Type.Array(FunctionDeclaration, { maxItems: 128 })) },
  { description: 'Function declarations; Google-side tools (googleSearch, codeExecution, ...) are refused with a 400' },
);

const Ignored = (what: string) => Type.Optional(Type.Unknown({ description: `${what}: accepted and ignored (named in the x-storefront-ignored header)` }));

const GenerationConfig = Type.Object({
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  topP: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  topK: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  maxOutputTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  stopSequences: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1000 }), { maxItems: 16 })),
  candidateCount: Type.Optional(Type.Integer({ minimum: 1, description: 'Only 1' })),
  responseMimeType: Type.Optional(Type.String({ description: '`text/plain` or `application/json`' })),
  responseJsonSchema: Type.Optional(Type.Unknown({ description: 'JSON schema the answer follows (with application/json)' })),
  responseSchema: Type.Optional(Type.Unknown({ description: "The same in Gemini's schema subset" })),
  seed: Type.Optional(Type.Integer()),
  presencePenalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  frequencyPenalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  thinkingConfig: Type.Optional(
    Type.Object(
      {
        thinkingBudget: Type.Optional(
          Type.Integer({ minimum: -1, description: '0: no thinking; -1: dynamic (effort medium); otherwise a token budget (at least 1024 on a budget model)' }),
        ),
        thinkingLevel: Type.Optional(Type.String({ description: '`MINIMAL`, `LOW`, `MEDIUM` or `HIGH`: an effort level (when no thinkingBudget is set)' })),
        includeThoughts: Type.Optional(Type.Boolean({ description: 'Answer with the thinking as parts with `thought: true`' })),
      },
      { description: "Thinking, as the gateway's reasoning control; a model without one answers without it (named in x-storefront-ignored)" },
    ),
  ),
});

export const GenerateContentBody = Type.Object({
  contents: Type.Array(Content, { minItems: 1, maxItems: MAX_MESSAGES }),
  systemInstruction: Type.Optional(Type.Union([Content, Type.String({ maxLength: MAX_MESSAGE_CHARS })])),
  tools: Type.Optional(Type.Array(Tool, { maxItems: 16 })),
  toolConfig: Type.Optional(
    Type.Object({
      functionCallingConfig: Type.Optional(
        Type.Object({
          mode: Type.Optional(Type.String({ description: '`AUTO`, `ANY` or `NONE`' })),
          allowedFunctionNames: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 128 })),
        }),
      ),
    }),
  ),
  generationConfig: Type.Optional(GenerationConfig),
  safetySettings: Ignored('Safety settings'),
  cachedContent: Type.Optional(Type.Unknown({ description: 'Cached contents: not supported, refused with a 400' })),
});

/** The body of every `models/{model}:<method>` call: countTokens may wrap the request in `generateContentRequest`. */
export const ModelCallBody = Type.Object({
  ...GenerateContentBody.properties,
  contents: Type.Optional(GenerateContentBody.properties.contents),
  generateContentRequest: Type.Optional(GenerateContentBody),
});

export const ModelCallQuery = Type.Object({
  alt: Type.Optional(
    Type.String({
      description: 'streamGenerateContent: `sse` for Server-Sent Events, `json` (the default) for one JSON array of chunks, written as they come',
    }),
  ),
  key: Type.Optional(Type.String({ description: 'The API key, when not sent as x-goog-api-key' })),
});

export const CountTokensResponse = Type.Object({ totalTokens: Type.Integer({ description: "An estimate in the gateway's tokenizer; nothing is charged" }) });

export const ModelPathParams = Type.Object({
  '*': Type.String({ minLength: 1, maxLength: 300, description: '`<model>:<method>` or `<model>` (the model id may hold a slash)' }),
});

const UsageMetadata = Type.Object({
  promptTokenCount: Type.Integer(),
  candidatesTokenCount: Type.Integer({ description: 'Output tokens, thinking excluded' }),
  thoughtsTokenCount: Type.Optional(Type.Integer()),
  cachedContentTokenCount: Type.Optional(Type.Integer({ description: 'Of promptTokenCount: read from the prompt cache' })),
  totalTokenCount: Type.Integer(),
  tokensCharged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
});

export const GenerateContentResponse = Type.Object({
  candidates: Type.Array(
    Type.Object({
      content: Type.Object({
        role: Type.Literal('model'),
        parts: Type.Array(
          Type.Object(
            {},
            {
              additionalProperties: true,
              description:
                "{ text } (`thought: true` on a thought) or { functionCall: { name, args, id } }; the first functionCall, else the last part, carries the turn's thoughtSignature when the model thought",
            },
          ),
        ),
      }),
      finishReason: Type.String(),
      index: Type.Integer(),
    }),
  ),
  usageMetadata: UsageMetadata,
  modelVersion: Type.String(),
  responseId: Type.String({ description: "The gateway's request id" }),
});

export const GeminiModel = Type.Object({
  name: Type.String({ description: '`models/<model id>`' }),
  baseModelId: Type.String(),
  version: Type.String(),
  displayName: Type.String(),
  description: Type.String(),
  inputTokenLimit: Type.Optional(Type.Integer()),
  outputTokenLimit: Type.Optional(Type.Integer()),
  supportedGenerationMethods: Type.Array(Type.String()),
});

export const GeminiModelList = Type.Object({ models: Type.Array(GeminiModel) });

export const GeminiError = Type.Object(
  {
    error: Type.Object({
      code: Type.Integer({ description: 'The HTTP status' }),
      message: Type.String(),
      status: Type.String({ description: 'INVALID_ARGUMENT, UNAUTHENTICATED, NOT_FOUND, RESOURCE_EXHAUSTED, ...' }),
    }),
  },
  { $id: 'GeminiError', description: "Google's error shape" },
);

export const geminiErrors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('GeminiError')]));
