/**
 * n8n's own REST API as the editor calls it (n8n 2.33.7), for e2e tests that drive the operator's
 * tools: the owner account is set up and logged in (cookie), then
 *   - run(workflowId, payload)      POST /rest/workflows/:id/run: the editor's "Execute workflow"
 *                                   ({ triggerToStartFrom: { name } }) and "Execute step"
 *                                   ({ runData, destinationNode: { nodeName, mode: 'inclusive' },
 *                                   dirtyNodeNames }), shapes from n8n's ManualRunDto;
 *   - retry(executionId, load)      POST /rest/executions/:id/retry { loadWorkflow }: "Retry with
 *                                   currently saved workflow" (true) / "with original workflow"
 *                                   (false), both from the node with the error;
 *   - execution(id)                 GET /rest/executions/:id, its run data unflattened (flatted);
 *   - workflow / saveWorkflow       GET and PATCH /rest/workflows/:id, as the editor saves (pinned
 *                                   data included).
 * Every request has a 30 s client deadline.
 */
import { parse } from 'flatted';
import { type Json } from './n8nHarness';
import { waitFor } from './wait';

export interface Execution {
	id: string;
	status: string;
	mode: string;
	finished: boolean;
	retryOf: string | null;
	runData: Record<string, Json[]>;
	lastNodeExecuted?: string;
	error?: { message?: string; description?: string };
}

export interface N8nRest {
	request(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }>;
	run(workflowId: string, payload: Json): Promise<{ executionId?: string; waitingForWebhook?: boolean }>;
	retry(executionId: string, loadWorkflow: boolean): Promise<{ status: number; body: Json }>;
	execution(id: string): Promise<Execution>;
	/** Polls until the execution is no longer new, running or waiting (or `until` says so); throws after `timeoutMs`. */
	finished(id: string, timeoutMs?: number): Promise<Execution>;
	workflow(id: string): Promise<Json>;
	saveWorkflow(id: string, change: (wf: Json) => void): Promise<Json>;
}

const OWNER = { email: 'owner@example.com', firstName: 'Ada', lastName: 'Owner', password: 'Recovery-Paths-2026!' };

/** Sets up the owner (once per instance) and logs in. */
export async function ownerSession(baseUrl: string): Promise<N8nRest> {
	const call = (path: string, init: RequestInit) => fetch(`${baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
	const setup = await call('/rest/owner/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
	await setup.arrayBuffer();
	const login = await call('/rest/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ emailOrLdapLoginId: OWNER.email, password: OWNER.password }) });
	if (!login.ok) throw new Error(`n8n login answered ${login.status}: ${await login.text()}`);
	await login.arrayBuffer();
	const cookie = login.headers
		.getSetCookie()
		.map((c) => c.split(';')[0])
		.join('; ');

	const request = async (method: string, path: string, body?: unknown) => {
		const res = await call(path, { method, headers: { 'content-type': 'application/json', cookie }, body: body === undefined ? undefined : JSON.stringify(body) });
		const text = await res.text();
		let json: Json = {};
		try {
			json = JSON.parse(text) as Json;
		} catch {
			json = { text };
		}
		return { status: res.status, body: json };
	};
	const execution = async (id: string): Promise<Execution> => {
		const r = await request('GET', `/rest/executions/${id}`);
		if (r.status !== 200) throw new Error(`GET /rest/executions/${id} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 500)}`);
		const e = r.body.data;
		const data = typeof e.data === 'string' ? parse(e.data) : e.data;
		return {
			id: String(e.id),
			status: e.status,
			mode: e.mode,
			finished: e.finished,
			retryOf: e.retryOf ?? null,
			runData: data?.resultData?.runData ?? {},
			lastNodeExecuted: data?.resultData?.lastNodeExecuted,
			error: data?.resultData?.error,
		};
	};
	const rest: N8nRest = {
		request,
		async run(workflowId, payload) {
			const r = await request('POST', `/rest/workflows/${workflowId}/run`, payload);
			if (r.status !== 200) throw new Error(`POST /rest/workflows/${workflowId}/run answered ${r.status}: ${JSON.stringify(r.body).slice(0, 500)}`);
			return r.body.data;
		},
		retry: (executionId, loadWorkflow) => request('POST', `/rest/executions/${executionId}/retry`, { loadWorkflow }),
		execution,
		async finished(id, timeoutMs = 120_000) {
			return waitFor(
				async () => {
					const e = await execution(id).catch(() => undefined);
					return e && !['new', 'running', 'waiting'].includes(e.status) && e;
				},
				{ what: `execution ${id} to finish`, timeoutMs, intervalMs: 200 },
			);
		},
		async workflow(id) {
			const r = await request('GET', `/rest/workflows/${id}`);
			if (r.status !== 200) throw new Error(`GET /rest/workflows/${id} answered ${r.status}`);
			return r.body.data;
		},
		async saveWorkflow(id, change) {
			const wf = await rest.workflow(id);
			change(wf);
			const r = await request('PATCH', `/rest/workflows/${id}`, { versionId: wf.versionId, nodes: wf.nodes, connections: wf.connections, pinData: wf.pinData ?? {} });
			if (r.status !== 200) throw new Error(`PATCH /rest/workflows/${id} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 500)}`);
			return r.body.data;
		},
	};
	return rest;
}

/** Items per output of the node's last run in an execution's run data: [[...output 0], [...output 1], ...]. */
export function outputsOf(e: Execution, node: string, run = -1): Json[][] {
	const runs = e.runData[node];
	if (!runs?.length) return [];
	const r = runs.at(run);
	return ((r?.data?.main ?? []) as Array<Json[] | null>).map((items) => (items ?? []).map((i) => i.json));
}

/** The output indexes of the node's last run that hold items. */
export function takenOf(e: Execution, node: string): number[] {
	return outputsOf(e, node).flatMap((items, i) => (items.length ? [i] : []));
}
