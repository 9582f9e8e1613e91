import { messageText, type ChatMessage } from '../providers/types.js';

/**
 * The short server-side instruction each model type receives before the caller's own system message.
 * Models whose capabilities say `serverInstruction: false` get none; models that take no system role
 * (`systemMessage: false`) get every system text folded into the first user turn.
 */
const SERVER_INSTRUCTIONS: Record<string, string> = {
  TEXT: "You are a helpful, accurate assistant. Answer the user's request directly and concisely, and say so when you are not sure.",
  MULTIMODAL: "You are a helpful, accurate multimodal assistant. Answer the user's request directly and concisely, and say so when you are not sure.",
};

export interface InstructionModel {
  type: string;
  capabilities: { flags?: Record<string, unknown> };
}

/** `instruction`: undefined for the model type's own, null for none (the SDK-compatible surfaces send messages as they are). */
export function withServerInstruction(
  model: InstructionModel,
  messages: readonly ChatMessage[],
  instruction: string | null | undefined = undefined,
): ChatMessage[] {
  const flags = model.capabilities.flags ?? {};
  const chosen = instruction === undefined ? SERVER_INSTRUCTIONS[model.type] : instruction;
  const leading = chosen && flags.serverInstruction !== false ? [{ role: 'system' as const, content: chosen }] : [];
  // The server instruction first, then the caller's system messages, then the conversation in its order.
  const ordered = [...leading, ...messages.filter((m) => m.role === 'system'), ...messages.filter((m) => m.role !== 'system')];
  if (flags.systemMessage !== false) return ordered;
  const system = ordered.filter((m) => m.role === 'system').map((m) => messageText(m));
  const rest = ordered.filter((m) => m.role !== 'system');
  if (system.length === 0) return rest;
  const firstUser = rest.findIndex((m) => m.role === 'user');
  if (firstUser === -1) return [{ role: 'user', content: system.join('\n\n') }, ...rest];
  const folded = system.join('\n\n');
  return rest.map((m, i) => {
    if (i !== firstUser) return m;
    const content = typeof m.content === 'string' ? `${folded}\n\n${m.content}` : [{ type: 'text' as const, text: folded }, ...m.content];
    return { ...m, content };
  });
}

export const ENHANCE_TARGETS = ['text', 'image', 'video', 'audio', 'audio.speech', 'audio.music', 'audio.sfx'] as const;
export type EnhanceTarget = (typeof ENHANCE_TARGETS)[number];

const ENHANCE_GUIDANCE: Record<Exclude<EnhanceTarget, 'audio'>, string> = {
  text: 'a clear, specific request for a text model that states the goal, the context, the constraints and the wanted format',
  image: 'a vivid description for an image model: subject, setting, composition, lighting, style and mood, as comma-separated phrases',
  video: 'a shot description for a video model: subject, action, camera movement, lighting, pacing and style',
  'audio.speech': 'the exact words a voice should say, written to be read aloud naturally, with no stage directions, sound tags or speaker labels',
  'audio.music': 'a music brief: genre, mood, instruments, tempo in BPM and structure',
  'audio.sfx': 'one sound effect described precisely: its source, the action, the acoustic space and the duration',
};

/** Bare `audio` means speech. */
export const normaliseTarget = (target: EnhanceTarget | undefined): Exclude<EnhanceTarget, 'audio'> =>
  !target ? 'text' : target === 'audio' ? 'audio.speech' : target;

export function enhanceInstruction(target: Exclude<EnhanceTarget, 'audio'>): string {
  return (
    `You improve prompts for generative AI. Rewrite the user's prompt as one better prompt for the target "${target}": ${ENHANCE_GUIDANCE[target]}. ` +
    "Keep the user's intent, language and key details. Reply with the improved prompt only, without a preamble, quotes or explanation."
  );
}

/** Models sometimes wrap the answer in quotes or a label; the caller wants the bare prompt. */
export function cleanEnhanced(text: string): string {
  let result = text.trim().replace(/^(improved|enhanced|rewritten)?\s*prompt\s*:\s*/i, '');
  const quoted = /^["'\u201c\u2018`]+([\s\S]*?)["'\u201d\u2019`]+$/.exec(result);
  if (quoted) result = quoted[1]!.trim();
  return result;
}
