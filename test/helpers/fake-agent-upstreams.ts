import { startFakeAnthropic } from '../../src/modules/gateway/providers/anthropic/anthropic.fake.js';
import { promptTokens, startFakeOpenAi, tokensOf, type FakeBehavior, type FakeRequest, type FakeUpstream } from './fake-upstreams.js';
import { providerEnv } from './gateway.js';

/**
 * The OpenAI and Anthropic fakes in "agent mode": a model that a coding agent can drive through one tool round trip.
 * When a user turn asks for the shell check (`AGENT_TOOL_PROMPT`), the request offers the agent's shell tool and no
 * tool has answered yet, the model calls that tool with `AGENT_CHECK_COMMAND`; once the result is back it answers with
 * a sentence that quotes it. Any other call (a plain question, or the CLIs' own side calls: titles, topic detection,
 * command classifiers) gets a short text answer.
 *
 * The command prints `AGENT_CHECK` but spells it in two pieces, so the word appears whole only in what the command
 * printed: a tool result or an answer that carries it shows that the CLI ran the command and the model read its output.
 */

export const AGENT_CHECK = 'storefront-agent-check';
export const AGENT_CHECK_COMMAND = "printf '%s-%s\\n' storefront-agent check";
/** The prompt of a tool round trip; the fakes look for its words in the user turns. */
export const AGENT_TOOL_PROMPT = 'Run the shell check and tell me what it printed.';
const TRIGGER = 'run the shell check';
/** The sentence before the quoted tool result in the final answer. */
export const QUOTE_PREFIX = 'The shell check printed:';
/** The answer of every other call. */
export const PLAIN_ANSWER = 'Lighthouses shine a bright rotating light so ships can find their way.';
/** Reasoning tokens the OpenAI fake reports on a reasoning model's call (GPT-5 always reasons). */
export const OPENAI_REASONING_TOKENS = 64;

/** The shell tools of the three CLIs by name: Codex's `exec_command`, Claude Code's `Bash`, Gemini CLI's `run_shell_command`. */
const SHELL_TOOLS: Record<string, string> = { exec_command: 'cmd', Bash: 'command', run_shell_command: 'command' };
const SHELL_DESCRIPTION = 'Prints the check word';

interface OfferedTool {
  name: string;
  schema: { properties?: Record<string, { type?: unknown }>; required?: string[] };
}

/**
 * The shell call's arguments from the tool's JSON schema: the command, a description where the schema has one, and
 * nothing else. A required argument the fake cannot fill is an error (the call fails loudly, it does not guess).
 */
function shellArguments(tool: OfferedTool): string {
  const commandField = SHELL_TOOLS[tool.name]!;
  const properties = tool.schema.properties ?? {};
  if (!(commandField in properties)) throw new Error(`${tool.name} has no "${commandField}" argument: ${JSON.stringify(tool.schema)}`);
  const args: Record<string, string> = { [commandField]: AGENT_CHECK_COMMAND };
  if ('description' in properties) args.description = SHELL_DESCRIPTION;
  const missing = (tool.schema.required ?? []).filter((name) => !(name in args));
  if (missing.length > 0) throw new Error(`${tool.name} requires arguments the agent fake does not fill: ${missing.join(', ')}`);
  return JSON.stringify(args);
}

const asText = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part: any) => (typeof part?.text === 'string' ? part.text : typeof part?.content !== 'undefined' ? asText(part.content) : ''))
      .join('\n');
  return '';
};

/** What the model says once it has the tool's result: the result quoted on one line. */
const quote = (result: string) => `${QUOTE_PREFIX} ${result.replace(/\s+/g, ' ').trim()}`;

interface Turn {
  tools: OfferedTool[];
  /** The text of the conversation's latest tool results, or null when no tool has answered yet. */
  toolResults: string | null;
  /** Whether a user turn asks for the shell check. */
  asked: boolean;
}

/** Once a tool has answered, the model only talks about its result: it never runs the check twice in a conversation. */
function decideTurn(turn: Turn, id: string): { text?: string; toolCalls?: { id: string; name: string; arguments: string }[] } {
  if (turn.toolResults !== null) return { text: quote(turn.toolResults) };
  const shell = turn.tools.find((tool) => tool.name in SHELL_TOOLS);
  if (turn.asked && shell) return { toolCalls: [{ id, name: shell.name, arguments: shellArguments(shell) }] };
  return { text: PLAIN_ANSWER };
}

const callId = (prefix: string) => `${prefix}${Math.random().toString(36).slice(2, 14)}`;
const asksForCheck = (texts: string[]) => texts.some((text) => text.toLowerCase().includes(TRIGGER));

/** Chat completions: tools as `{type: 'function', function}`, tool results as runs of `role: 'tool'` messages. */
function openAiTurn(body: any): Turn {
  const messages: any[] = body.messages ?? [];
  const results: string[] = [];
  let i = messages.findLastIndex((message) => message.role === 'tool');
  for (; i >= 0 && messages[i].role === 'tool'; i--) results.unshift(asText(messages[i].content));
  return {
    tools: (body.tools ?? [])
      .filter((tool: any) => tool.type === 'function')
      .map((tool: any) => ({ name: tool.function.name, schema: tool.function.parameters ?? {} })),
    toolResults: results.length > 0 ? results.join('\n') : null,
    asked: asksForCheck(messages.filter((m) => m.role === 'user').map((m) => asText(m.content))),
  };
}

/** Messages: tools with `input_schema`, tool results as `tool_result` blocks of a user turn. */
function anthropicTurn(body: any): Turn {
  const messages: any[] = body.messages ?? [];
  const resultsOf = (message: any): any[] =>
    message.role === 'user' && Array.isArray(message.content) ? message.content.filter((block: any) => block.type === 'tool_result') : [];
  const latest = messages.findLast((message) => resultsOf(message).length > 0);
  return {
    tools: (body.tools ?? []).filter((tool: any) => tool.input_schema).map((tool: any) => ({ name: tool.name, schema: tool.input_schema })),
    toolResults: latest
      ? resultsOf(latest)
          .map((block: any) => asText(block.content))
          .join('\n')
      : null,
    asked: asksForCheck(messages.filter((m) => m.role === 'user').map((m) => asText(m.content))),
  };
}

/** GPT-5 and the o-series reason on every call (their default effort is medium), and report it as reasoning tokens. */
const REASONING_MODEL = /^(o\d|gpt-5)/;

function openAiBehavior(request: FakeRequest): FakeBehavior {
  if (request.method !== 'POST') return { kind: 'ok' };
  const answer = decideTurn(openAiTurn(request.body), callId('call_'));
  if (!REASONING_MODEL.test(String(request.body.model))) return { kind: 'ok', ...answer };
  const visible = tokensOf(answer.text ?? '') + (answer.toolCalls ?? []).reduce((sum, call) => sum + tokensOf(call.name) + tokensOf(call.arguments), 0);
  return {
    kind: 'ok',
    ...answer,
    usage: { inputTokens: promptTokens(request.body), outputTokens: visible + OPENAI_REASONING_TOKENS },
    tokenClasses: { reasoning: OPENAI_REASONING_TOKENS },
  };
}

/** Anthropic's fake thinks when the request enables thinking, and reports it as thinking tokens by itself. */
function anthropicBehavior(request: FakeRequest): FakeBehavior {
  if (request.method !== 'POST') return { kind: 'ok' };
  return { kind: 'ok', ...decideTurn(anthropicTurn(request.body), callId('toolu_')) };
}

export interface AgentUpstreams {
  openai: FakeUpstream;
  anthropic: FakeUpstream;
  /** The app's environment with OpenAI's and Anthropic's accounts pointed at the fakes. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startAgentUpstreams(): Promise<AgentUpstreams> {
  const openai = await startFakeOpenAi(openAiBehavior);
  const anthropic = await startFakeAnthropic(anthropicBehavior);
  return {
    openai,
    anthropic,
    env: { ...providerEnv('OPENAI', openai.baseUrl, ['sk-agent-openai-0001']), ...providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-agent-0001']) },
    async close() {
      await openai.close();
      await anthropic.close();
    },
  };
}
