/**
 * Typed access, for the jest e2e tests, to the plain-ESM harness in scripts/lib (shared with the
 * demo). Node's own require() (not jest's, which cannot parse ESM) loads ES modules without
 * top-level await (Node >= 20.19), which avoids jest's experimental ESM mode;
 * process.getBuiltinModule gives the real node:module.
 */
const realModule = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule('node:module');
export const nodeRequire = realModule.createRequire(__filename);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

/** What `n8n execute --rawOutput` printed, parsed. */
export interface RunResult {
	data: { resultData: { runData: Record<string, unknown>; error?: unknown } };
	__ms?: number;
}

export interface CliResult {
	code: number | null;
	stdout: string;
	stderr: string;
	ms: number;
}

/** A long-running n8n process (`start`, `worker`). */
export interface N8nProcess {
	pid: number;
	exited(): unknown;
	kill(): Promise<void>;
	stop(): Promise<void>;
}

export interface N8nInstance {
	url: string;
	logFile: string;
	/** N8N_USER_FOLDER: community packages go to <userFolder>/.n8n/nodes. */
	userFolder: string;
	encryptionKey: string;
	database: { database: string; url: string };
	importCredentials(c: Json | Json[] | string): Promise<unknown>;
	importWorkflow(w: Json | Json[] | string): Promise<CliResult>;
	cli(args: string[], opts?: { timeoutMs?: number; allowFail?: boolean }): Promise<CliResult>;
	execute(id: string): Promise<RunResult>;
	/** publish:workflow on 2.x, update:workflow --active=true on 1.x; before start(). */
	publishWorkflow(id: string): Promise<CliResult>;
	/** Waits until the running n8n serves these production webhooks (its own activation state). */
	waitForWebhooks(hooks: Array<{ path: string; method?: string; form?: boolean }>, opts?: { timeoutMs?: number }): Promise<number>;
	start(opts?: Json): Promise<N8nProcess>;
	/** Stops `n8n start` (SIGTERM, SIGKILL after the grace period). */
	stop(): Promise<void>;
	spawn(command: string, opts?: Json): Promise<N8nProcess>;
	cleanup(opts?: { keep?: boolean }): Promise<void>;
	logTail(n?: number): string;
}

/** A package of the n8n runtime that node-gyp builds (scripts/lib/n8n.mjs nativeModules). */
export interface NativeModule {
	name: string;
	version: string;
	path: string;
	dir: string;
	optional: boolean;
	loads?: boolean;
	error?: string;
}

export interface RuntimeState {
	installed: boolean;
	recipe?: number;
	native: NativeModule[];
	missing: NativeModule[];
	optionalMissing: NativeModule[];
	ok: boolean;
}

export interface Harness {
	/** The n8n version under test (N8N_VERSION, default the pinned one) and its major. */
	N8N_VERSION: string;
	N8N_MAJOR: number;
	NODE_VERSION: string;
	packPackage(): Promise<string>;
	ensureN8n(opts?: { log?: (m: string) => void; dir?: string }): Promise<{ dir: string; nodeBin: string; binDir: string }>;
	/** ~/.cache/n8n-nodes-operation-ledger/n8n-<version> (XDG_CACHE_HOME moves ~/.cache; read at each call). */
	n8nRuntimeDir(): string;
	/** The runtime check: loads every native module with the runtime's Node (see scripts/lib/n8n.mjs). */
	inspectRuntime(dir: string): RuntimeState;
	nativeModules(dir: string): NativeModule[];
	runtimeNodeHeaders(dir: string): string | undefined;
	NATIVE_MODULES_N8N_RUNS_WITHOUT: Record<string, string>;
	RUNTIME_RECIPE: number;
	RECIPE_FILE: string;
	createN8nInstance(opts: Json): Promise<N8nInstance>;
	outputItems(r: RunResult, node: string): Json[][] | undefined;
	outputsTaken(r: RunResult, node: string): number[];
	nodesRun(r: RunResult): string[];
}

export interface EmbeddedPg {
	getDatabase(): Promise<{ url: string; source: string; stop(): Promise<void> }>;
}

export const harness = nodeRequire('../../scripts/lib/n8n.mjs') as Harness;
export const embedded = nodeRequire('../../scripts/lib/embedded-pg.mjs') as EmbeddedPg;

/** The shipped example workflows adapted for a scripted run (scripts/lib/example-workflows.mjs, shared with the demo). */
export interface ExampleWorkflows {
	readWorkflow(file: string): Json;
	renameNode(wf: Json, from: string, to: string): void;
	manualPaymentWorkflow(apiUrl: string, input?: Json): Json;
	webhookPaymentWorkflow(
		apiUrl: string,
		opts: { id: string; webhookPath: string; leaseSeconds?: number; settleSeconds?: number; timeoutMs?: number },
	): Json;
	reconcileWorkflow(apiUrl: string, opts?: { claimSeconds?: number }): Json;
}
export const exampleWorkflows = nodeRequire('../../scripts/lib/example-workflows.mjs') as ExampleWorkflows;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

