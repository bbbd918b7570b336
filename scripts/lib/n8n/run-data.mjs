// Reading the run that `n8n execute --rawOutput` prints: which items each node sent to which output.

/**
 * Items per output of `nodeName` in an `n8n execute --rawOutput` result:
 * [[...items of output 0], [...items of output 1], ...] (first run of that node).
 * Undefined when the node did not run.
 */
export function outputItems(result, nodeName, runIndex = 0) {
	const runs = result?.data?.resultData?.runData?.[nodeName];
	if (!runs || !runs[runIndex]) return undefined;
	const main = runs[runIndex].data?.main ?? [];
	return main.map((items) => (items ?? []).map((i) => i.json));
}

/** Indexes of the outputs of `nodeName` that received at least one item. */
export function outputsTaken(result, nodeName, runIndex = 0) {
	const outs = outputItems(result, nodeName, runIndex);
	if (!outs) return [];
	return outs.flatMap((items, i) => (items.length ? [i] : []));
}

/** Names of the nodes that ran, in run-data order. */
export function nodesRun(result) {
	return Object.keys(result?.data?.resultData?.runData ?? {});
}

/**
 * `n8n execute --rawOutput` prints the run as pretty JSON on stdout; log lines may surround it.
 * Returns the parsed object, or undefined when there is none.
 */
export function parseRunOutput(stdout) {
	const lines = stdout.split('\n');
	for (let start = 0; start < lines.length; start++) {
		if (lines[start] !== '{') continue;
		for (let end = lines.length - 1; end > start; end--) {
			if (lines[end] !== '}') continue;
			try {
				const obj = JSON.parse(lines.slice(start, end + 1).join('\n'));
				if (obj && obj.data && obj.data.resultData) return obj;
			} catch {
				/* try a shorter span */
			}
		}
	}
	return undefined;
}
