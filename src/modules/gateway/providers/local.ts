import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { countMessageTokens, countTextTokens, tokenPieces, truncateToTokens } from '../tokens.js';
import { UpstreamError, type ChatMessage, type ProviderAdapter, type TextRequest, type TextResult, type TextStream, type TextStreamEvent } from './types.js';

/**
 * The built-in provider: deterministic text generated offline, so the product works with no credentials.
 * The same conversation always gives the same answer; token counts are real (o200k_base); streams emit token by token.
 * It follows the gateway's prompt-enhancement instruction (recognised by ENHANCE_TARGET_PATTERN) so enhance works offline.
 */
export const ENHANCE_TARGET_PATTERN = /for the target "([a-z.]+)"/;

export interface LocalProviderOptions {
  /** Pause between streamed pieces (default 0: pieces are still yielded one event-loop turn apart). */
  chunkDelayMs?: number;
}

export function createLocalProvider(options: LocalProviderOptions = {}): ProviderAdapter {
  const chunkDelayMs = options.chunkDelayMs ?? 0;

  function generate(request: TextRequest): TextResult {
    if (request.signal?.aborted) throw new UpstreamError('aborted', 'The call was cancelled.');
    const full = compose(request.model, request.messages);
    const cut = truncateToTokens(full, request.maxTokens);
    return {
      text: cut.text,
      usage: { inputTokens: countMessageTokens(request.messages), outputTokens: countTextTokens(cut.text) },
      finishReason: cut.truncated ? 'length' : 'stop',
    };
  }

  return {
    kind: 'local',
    needsCredential: false,
    async generateText(_credential, request) {
      return generate(request);
    },
    async streamText(_credential, request) {
      const result = generate(request);
      const controller = new AbortController();
      const signal = request.signal ? AbortSignal.any([request.signal, controller.signal]) : controller.signal;
      async function* events(): AsyncGenerator<TextStreamEvent> {
        const pieces = tokenPieces(result.text);
        for (let i = 0; i < pieces.length; i += 2) {
          if (signal.aborted) throw new UpstreamError('aborted', 'The stream was cancelled.');
          yield { type: 'text', delta: pieces.slice(i, i + 2).join('') };
          if (chunkDelayMs > 0) await sleep(chunkDelayMs);
          else await new Promise<void>((resolve) => setImmediate(resolve));
        }
        yield { type: 'usage', usage: result.usage! };
        yield { type: 'finish', finishReason: result.finishReason };
      }
      const iterable = events();
      const stream: TextStream = {
        [Symbol.asyncIterator]: () => iterable,
        abort: () => controller.abort(),
      };
      return stream;
    },
    async checkCredential() {
      // needs none
    },
  };
}

/** A small deterministic pseudo-random generator seeded from the conversation. */
function seededRandom(seed: string): () => number {
  const digest = createHash('sha256').update(seed).digest();
  let state = digest.readUInt32LE(0) || 0x9e3779b9;
  return () => {
    // xorshift32
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x1_0000_0000;
  };
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

function keywords(text: string, max: number): string[] {
  const seen = new Set<string>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]{3,}/gu) ?? []) {
    if (STOP_WORDS.has(word)) continue;
    seen.add(word);
    if (seen.size >= max) break;
  }
  return [...seen];
}

const STOP_WORDS = new Set(['that', 'this', 'with', 'from', 'have', 'what', 'when', 'where', 'which', 'about', 'would', 'could', 'should', 'please', 'there', 'their', 'into', 'your', 'make', 'write', 'give', 'tell']);

function lastUserMessage(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return messages[i]!.content.trim();
  return '';
}

function compose(model: string, messages: readonly ChatMessage[]): string {
  const random = seededRandom(`${model}\u0000${JSON.stringify(messages)}`);
  const prompt = lastUserMessage(messages);
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
  const target = ENHANCE_TARGET_PATTERN.exec(system)?.[1];
  if (target) return enhance(prompt, target, random);
  return answer(prompt, random);
}

function sentenceCase(text: string): string {
  const trimmed = text.replace(/\s+/g, ' ').trim().replace(/[.!?,;:\s]+$/, '');
  return trimmed ? trimmed[0]!.toUpperCase() + trimmed.slice(1) : trimmed;
}

function answer(prompt: string, random: () => number): string {
  const words = keywords(prompt, 4);
  const topic = words.length > 0 ? words.join(', ') : 'your message';
  const openers = [
    `Here is a short answer about ${topic}.`,
    `Let's look at ${topic} step by step.`,
    `Thanks for the question about ${topic}.`,
    `A quick take on ${topic}:`,
  ];
  const bodies = [
    'Start from the goal, then list the constraints that matter most.',
    'Break the problem into small parts and check each one on its own.',
    'A concrete example usually makes the idea clearer than a definition.',
    'Compare two or three options side by side before choosing one.',
    'Write down the assumptions, because they are where surprises come from.',
    'Measure before and after a change, so the result speaks for itself.',
    'Keep the first version simple; refine it once it works end to end.',
    'Ask who will use the result and what they need from it first.',
  ];
  const closers = [
    'This answer comes from the built-in offline model, so it is generic by design.',
    'Connect a real provider for a tailored answer; this one is generated offline.',
    'Ask a follow-up question to go deeper into any of these points.',
  ];
  const count = 2 + Math.floor(random() * 3);
  const chosen: string[] = [];
  while (chosen.length < count) {
    const sentence = pick(random, bodies);
    if (!chosen.includes(sentence)) chosen.push(sentence);
  }
  const focus = words[0] ? ` For ${words[0]}, the details decide the outcome.` : '';
  return `${pick(random, openers)} ${chosen.join(' ')}${focus} ${pick(random, closers)}`;
}

function enhance(prompt: string, target: string, random: () => number): string {
  const base = sentenceCase(prompt) || 'A scene';
  switch (target) {
    case 'image':
      return `${base}, ${pick(random, ['highly detailed', 'intricate detail', 'crisp detail'])}, ${pick(random, ['soft natural lighting', 'golden-hour light', 'dramatic rim lighting'])}, ${pick(random, ['balanced composition', 'rule-of-thirds composition', 'centered composition'])}, ${pick(random, ['35mm photograph', 'digital painting', 'cinematic still'])}, sharp focus, rich colour palette`;
    case 'video':
      return `${base}. ${pick(random, ['Slow cinematic dolly-in', 'Smooth tracking shot', 'Gentle aerial pan'])}, steady camera, natural motion, ${pick(random, ['golden-hour light', 'soft overcast light', 'moody blue-hour light'])}, shallow depth of field, 24 fps film look.`;
    case 'audio':
    case 'audio.speech':
      return `${base}.`;
    case 'audio.music':
      return `${pick(random, ['Upbeat synth-pop', 'Warm lo-fi hip hop', 'Cinematic orchestral', 'Acoustic folk'])} track inspired by: ${base}. ${pick(random, ['Analog pads, punchy drums and a melodic bassline', 'Piano, strings and soft percussion', 'Fingerpicked guitar, light shaker and warm bass'])}, ${pick(random, [88, 96, 110, 118, 124])} BPM.`;
    case 'audio.sfx':
      return `A single sound: ${base.toLowerCase()}, close-miked, clean, no background noise, short natural decay.`;
    default:
      return `${base}. Answer in clear, short sections, give one concrete example, and state any assumptions you make.`;
  }
}
