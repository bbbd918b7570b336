// Harness for running a real, pinned n8n against this package (e2e tests, the demo, queue-mode tests).
//
//   const rt = await ensureN8n();                 // installs or reuses n8n + Node 22 in ~/.cache
//   const tarball = await packPackage();          // npm run build && npm pack
//   const n8n = await createN8nInstance({ databaseUrl, tarball });
//   await n8n.importCredentials({...}); await n8n.importWorkflow(workflowJson);
//   const run = await n8n.execute('idempotent-payment');
//   outputItems(run, 'Reserve Operation')        // [[items of output 0], [items of output 1], ...]
//   await n8n.cleanup();
//
// Plain Node >= 20 ESM; the only package used is `pg` (a devDependency) to create/drop databases.
//
// Versions come from the environment (defaults: the pinned ones below):
//   N8N_VERSION=1.123.81 N8N_NODE_VERSION=22.23.3 npm run test:e2e
//   N8N_VERSION=2.41.1 N8N_NODE_VERSION=24 npm run test:e2e
// N8N_NODE_VERSION is an exact version or a major ("24": the newest 24.x on the registry).
// N8N_INSTALL_FLAGS are extra `npm install` flags for the runtime (split on spaces).
// Each n8n version gets its own folder under ~/.cache/n8n-nodes-operation-ledger (XDG_CACHE_HOME
// moves ~/.cache). How a runtime is installed, checked and repaired: "Installing n8n" in
// n8n/runtime.mjs.
//
// The parts, each its own module under scripts/lib/n8n/:
//   runtime.mjs   the versions, the runtime folder, install / check / repair (ensureN8n, inspectRuntime)
//   pack.mjs      npm run build && npm pack (packPackage)
//   instance.mjs  one n8n installation: folders, database, environment, the package, the CLI,
//                 long-running processes and readiness, webhooks over HTTP (createN8nInstance)
//   run-data.mjs  reading a printed run (outputItems, outputsTaken, nodesRun, parseRunOutput)
//   database.mjs  n8n's own database on the test server
//   process.mjs   process groups, log files, lock folders, bounded polling (pollUntil)
// This module is the one callers import.
export {
	PINNED_N8N_VERSION,
	PINNED_NODE_VERSION,
	N8N_VERSION,
	NODE_VERSION,
	INSTALL_FLAGS,
	N8N_MAJOR,
	PACKAGE_NAME,
	n8nRuntimeDir,
	RUNTIME_RECIPE,
	RECIPE_FILE,
	NATIVE_MODULES_N8N_RUNS_WITHOUT,
	nativeModules,
	loadNativeModules,
	runtimeNodeHeaders,
	inspectRuntime,
	missingNativeError,
	ensureN8n,
} from './n8n/runtime.mjs';
export { packPackage } from './n8n/pack.mjs';
export { createN8nInstance } from './n8n/instance.mjs';
export { outputItems, outputsTaken, nodesRun, parseRunOutput } from './n8n/run-data.mjs';
export { pollUntil } from './n8n/process.mjs';
