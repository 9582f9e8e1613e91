import { createHash } from 'node:crypto';
import { messageImages, messageText, type ChatMessage, type ImagePart } from '../types.js';

/**
 * The texts of the built-in model: plain answers, prompt enhancement, image descriptions and the follow-up to tool
 * results. Everything is a function of the conversation (and the seed), so the same request gives the same text.
 */
export const ENHANCE_TARGET_PATTERN = /for the target "([a-z.]+)"/;

/** A small deterministic pseudo-random generator seeded from the conversation. */
export function seededRandom(seed: string): () => number {
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

export const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

export function keywords(text: string, max: number): string[] {
  const seen = new Set<string>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]{3,}/gu) ?? []) {
    if (STOP_WORDS.has(word)) continue;
    seen.add(word);
    if (seen.size >= max) break;
  }
  return [...seen];
}

export const STOP_WORDS = new Set([
  'that',
  'this',
  'with',
  'from',
  'have',
  'what',
  'when',
  'where',
  'which',
  'about',
  'would',
  'could',
  'should',
  'please',
  'there',
  'their',
  'into',
  'your',
  'make',
  'write',
  'give',
  'tell',
]);

/** The prompt's content words for phrases and topics built here (not the plain answers, which must not change). */
export function topicWords(text: string, max: number): string[] {
  return keywords(text, max + 8)
    .filter((word) => !word.includes("'") && !/^[\d.,-]+$/.test(word) && !TOPIC_FILLERS.has(word))
    .slice(0, max);
}

const TOPIC_FILLERS = new Set([
  'like',
  'next',
  'some',
  'them',
  'then',
  'than',
  'also',
  'just',
  'need',
  'want',
  'know',
  'does',
  'show',
  'find',
  'look',
  'check',
  'hello',
  'thanks',
]);

export function lastUserIndex(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return i;
  return -1;
}

export function lastUserMessage(messages: readonly ChatMessage[]): string {
  const index = lastUserIndex(messages);
  return index < 0 ? '' : messageText(messages[index]!).trim();
}

function sentenceCase(text: string): string {
  const trimmed = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!?,;:\s]+$/, '');
  return trimmed ? trimmed[0]!.toUpperCase() + trimmed.slice(1) : trimmed;
}

export function answer(prompt: string, random: () => number): string {
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

export function enhance(prompt: string, target: string, random: () => number): string {
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

const FORMAT_NAMES: Record<string, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP' };

function describeImage(image: ImagePart): string {
  if (image.source.kind === 'url') {
    let host = 'an unknown address';
    try {
      host = new URL(image.source.url).host || host;
    } catch {
      // keep the generic wording
    }
    return `an image at ${host} (the offline model does not download it)`;
  }
  const format = FORMAT_NAMES[image.source.mediaType.toLowerCase()] ?? image.source.mediaType;
  const size = image.width && image.height ? `${image.width}×${image.height} ` : '';
  return `a ${size}${format} image`;
}

/** "The image is a 640×480 PNG image." for one image; one sentence per image, numbered, for several. */
export function describeImages(images: readonly ImagePart[]): string {
  if (images.length === 1) return `The image is ${describeImage(images[0]!)}.`;
  return images.map((image, index) => `Image ${index + 1} is ${describeImage(image)}.`).join(' ');
}

/** The images of the message being answered (the last user message). */
export function imagesToDescribe(messages: readonly ChatMessage[]): ImagePart[] {
  const index = lastUserIndex(messages);
  return index < 0 ? [] : messageImages(messages[index]!);
}

const RESULT_SUMMARY_CHARS = 200;

/** A tool result in one line: compact JSON when it is JSON, whitespace collapsed, cut to a readable length. */
function summariseResult(content: string): string {
  let text = content.trim();
  try {
    text = JSON.stringify(JSON.parse(text));
  } catch {
    text = text.replace(/\s+/g, ' ');
  }
  if (!text) return '(empty)';
  return text.length > RESULT_SUMMARY_CHARS ? `${text.slice(0, RESULT_SUMMARY_CHARS)}…` : text;
}

/**
 * The tool results of the current turn (those after the last assistant message). Anthropic's format may put the
 * caller's text after them in the same turn ([tool_result, "go on"]); that is still an answer to the results.
 */
export function trailingToolResults(messages: readonly ChatMessage[]): ChatMessage[] {
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  return messages.slice(lastAssistant + 1).filter((message) => message.role === 'tool');
}

/** The answer after tool results: what each tool returned, so an agent loop ends with text. */
export function toolResultsAnswer(messages: readonly ChatMessage[], results: readonly ChatMessage[]): string {
  const callNames = new Map<string, string>();
  for (const message of messages) for (const call of message.toolCalls ?? []) callNames.set(call.id, call.name);
  const sentences = results.map((result) => {
    const name = (result.toolCallId && callNames.get(result.toolCallId)) || 'the tool';
    const text = messageText(result);
    const images = messageImages(result);
    const summary = text.trim() || images.length === 0 ? summariseResult(text) : describeImages(images).replace(/\.$/, '');
    return result.isError ? `${name} failed: ${summary}.` : `According to ${name}: ${summary}.`;
  });
  const words = topicWords(lastUserMessage(messages), 4);
  const topic = words.length > 0 ? ` That is what the tools returned for your question about ${words.join(', ')}.` : '';
  return `${sentences.join(' ')}${topic} This summary comes from the built-in offline model.`;
}
