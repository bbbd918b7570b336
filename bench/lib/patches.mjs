// Experiments for BENCHMARKS.md's proposed fixes: applied ONLY to a benchmark's own throw-away
// schema, never to schema/*.sql. Selected with BENCH_PATCH=name[,name...]; off by default.
//
//   claim-async-commit   queue_claim sets synchronous_commit = off for its own transaction, so the
//                        queue's scheduler row is not held across a WAL flush (a claim lost in a
//                        server crash only puts its tasks back to pending: a redelivery the lease
//                        contract already allows).
//                        Measured and rejected for the shipped code: a committed claim lost in a
//                        server crash could hand a task to a second holder while the first still
//                        believes its lease is live (docs/queue.md). Kept to show what durability costs.
// (The former claim-no-head-locks experiment is now how queue_claim works.)

export const PATCHES = {
	'claim-async-commit': { fn: 'queue_claim', edit: (src) => src.replace(/\nBEGIN\n/, "\nBEGIN\n    PERFORM set_config('synchronous_commit', 'off', true);\n") },
};

/** Applies the patches named in BENCH_PATCH to `schema`; returns their names. */
export async function applyPatches(pool, schema) {
	const names = (process.env.BENCH_PATCH ?? '').split(',').map((s) => s.trim()).filter(Boolean);
	for (const name of names) {
		const p = PATCHES[name];
		if (!p) throw new Error(`unknown BENCH_PATCH ${name}; known: ${Object.keys(PATCHES).join(', ')}`);
		const { rows } = await pool.query('SELECT pg_get_functiondef(to_regproc($1)) AS def', [`"${schema}".${p.fn}`]);
		const before = rows[0].def;
		const after = p.edit(before);
		if (after === before) throw new Error(`BENCH_PATCH ${name}: the pattern was not found in ${p.fn}`);
		await pool.query(after);
	}
	return names;
}
