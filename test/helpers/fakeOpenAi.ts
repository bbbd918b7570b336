/**
 * A real HTTP server standing in for the OpenAI API, on 127.0.0.1 and a port the OS picks, so that
 * n8n's own "OpenAI Chat Model" sub-node (credential `openAiApi`, field "Base URL" = `${url}/v1`)
 * and "AI Agent" node run unchanged against scripted answers.
 *
 *   POST /v1/chat/completions   replays the next scripted answer (first in, first out), plain JSON or
 *                               server-sent events when the request asks for `stream: true`
 *   GET  /v1/models             a short model list (the credential test and the model picker ask)
 *
 * A scripted answer is the JSON value the agent should end with. How it is delivered:
 *   'tool'     (default when the request offers a tool named `format_final_json_response`, which
 *              n8n's Tools Agent adds when a Structured Output Parser is attached): one tool call to
 *              that tool with the arguments `{"output": <answer>}`, the shape the parser's schema has.
 *   'content'  the answer as the assistant message's text (JSON); the agent parses it itself.
 * With nothing scripted the server answers 500, so a test that forgot a script fails loudly.
 * Every request is recorded (path, parsed body, Authorization header).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const FINAL_RESPONSE_TOOL = 'format_final_json_response';

export interface ScriptedAnswer {
	/** The value the agent should return (for the structured output parser: the object inside `output`). */
	answer: unknown;
	/** How to deliver it; default: 'tool' when the request offers the final-response tool, else 'content'. */
	as?: 'tool' | 'content';
}

export interface RecordedChatRequest {
	method: string;
	path: string;
	authorization: string | null;
	body: any;
	/** Which scripted answer was replayed (0-based), or null when none was left. */
	answered: number | null;
	at: string;
}

export interface FakeOpenAi {
	/** Base URL for the credential's "Base URL" field, ending in /v1. */
	baseUrl: string;
	port: number;
	/** Queues answers for the next chat completion requests, in order. */
	script(...answers: Array<ScriptedAnswer | unknown>): void;
	/** Answers still queued. */
	pending(): number;
	requests(): RecordedChatRequest[];
	/** Only the chat completion requests. */
	chatRequests(): RecordedChatRequest[];
	close(): Promise<void>;
}

const isScripted = (v: unknown): v is ScriptedAnswer => !!v && typeof v === 'object' && 'answer' in (v as object);

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
	const queue: ScriptedAnswer[] = [];
	const requests: RecordedChatRequest[] = [];
	let answeredCount = 0;
	let idSeq = 0;

	const sendJson = (res: http.ServerResponse, status: number, body: unknown) => {
		const text = JSON.stringify(body);
		res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
		res.end(text);
	};

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => {
			const url = new URL(req.url ?? '/', 'http://127.0.0.1');
			const raw = Buffer.concat(chunks).toString('utf8');
			let body: any = null;
			try {
				body = raw ? JSON.parse(raw) : null;
			} catch {
				body = raw;
			}
			const record: RecordedChatRequest = {
				method: req.method ?? '',
				path: url.pathname,
				authorization: typeof req.headers.authorization === 'string' ? req.headers.authorization : null,
				body,
				answered: null,
				at: new Date().toISOString(),
			};
			requests.push(record);

			if (req.method === 'GET' && url.pathname === '/v1/models') {
				sendJson(res, 200, {
					object: 'list',
					data: [{ id: 'gpt-4.1-mini', object: 'model', created: 1700000000, owned_by: 'fake' }],
				});
				return;
			}
			if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
				sendJson(res, 404, { error: { message: `No route ${req.method} ${url.pathname}`, type: 'invalid_request_error' } });
				return;
			}
			const next = queue.shift();
			if (!next) {
				sendJson(res, 500, { error: { message: 'fake OpenAI: no scripted answer left', type: 'server_error' } });
				return;
			}
			record.answered = answeredCount++;
			const offersTool =
				Array.isArray(body?.tools) && body.tools.some((t: any) => t?.function?.name === FINAL_RESPONSE_TOOL);
			const as = next.as ?? (offersTool ? 'tool' : 'content');
			const model = typeof body?.model === 'string' ? body.model : 'gpt-4.1-mini';
			const id = `chatcmpl-fake-${++idSeq}`;
			const created = Math.floor(Date.now() / 1000);
			const usage = { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 };
			const toolCall = {
				id: `call_fake_${idSeq}`,
				type: 'function',
				function: { name: FINAL_RESPONSE_TOOL, arguments: JSON.stringify({ output: next.answer }) },
			};
			const content = as === 'content' ? JSON.stringify(next.answer) : null;

			if (body?.stream === true) {
				res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
				const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
					res.write(
						`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
					);
				if (as === 'tool') {
					chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...toolCall, function: { name: FINAL_RESPONSE_TOOL, arguments: '' } }] }, null);
					chunk({ tool_calls: [{ index: 0, function: { arguments: toolCall.function.arguments } }] }, null);
					chunk({}, 'tool_calls');
				} else {
					chunk({ role: 'assistant', content }, null);
					chunk({}, 'stop');
				}
				if (body?.stream_options?.include_usage) {
					res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
				}
				res.end('data: [DONE]\n\n');
				return;
			}
			const message =
				as === 'tool' ? { role: 'assistant', content: null, tool_calls: [toolCall] } : { role: 'assistant', content };
			sendJson(res, 200, {
				id,
				object: 'chat.completion',
				created,
				model,
				choices: [{ index: 0, message, logprobs: null, finish_reason: as === 'tool' ? 'tool_calls' : 'stop' }],
				usage,
			});
		});
	});

	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => resolve());
	});
	const { port } = server.address() as AddressInfo;

	return {
		baseUrl: `http://127.0.0.1:${port}/v1`,
		port,
		script(...answers) {
			for (const a of answers) queue.push(isScripted(a) ? a : { answer: a });
		},
		pending: () => queue.length,
		requests: () => requests.slice(),
		chatRequests: () => requests.filter((r) => r.path === '/v1/chat/completions'),
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
