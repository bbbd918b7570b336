// Renders bench/results/latest.json as one SVG of horizontal bar charts (no dependencies).
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const COLORS = { ours: '#2b6cb0', direct: '#718096', perItem: '#c05621', graphile: '#2f855a', pgboss: '#805ad5', polling: '#c53030' };

/** panels: [{ title, unit, log?: boolean, bars: [{ label, value, color }] }] */
function render(panels, width = 860) {
	const barH = 16;
	const gap = 4;
	const left = 250;
	const right = 110;
	let y = 20;
	const parts = [];
	for (const p of panels) {
		parts.push(`<text x="10" y="${y + 14}" font-weight="bold" font-size="14">${esc(p.title)}</text>`);
		y += 24;
		const max = Math.max(...p.bars.map((b) => b.value).filter(Number.isFinite), 1e-9);
		const scale = (v) => {
			if (!Number.isFinite(v) || v <= 0) return 0;
			if (p.log) return (Math.log10(v + 1) / Math.log10(max + 1)) * (width - left - right);
			return (v / max) * (width - left - right);
		};
		for (const b of p.bars) {
			const w = Math.max(1, scale(b.value));
			parts.push(`<text x="${left - 6}" y="${y + 12}" text-anchor="end" font-size="12">${esc(b.label)}</text>`);
			parts.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${b.color}"/>`);
			const shown = Number.isFinite(b.value) ? (b.value >= 100 ? Math.round(b.value).toLocaleString('en') : b.value.toFixed(2)) : 'n/a';
			parts.push(`<text x="${left + w + 6}" y="${y + 12}" font-size="12">${esc(shown)} ${esc(p.unit)}</text>`);
			y += barH + gap;
		}
		y += 14;
	}
	return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="Helvetica, Arial, sans-serif">
<rect width="100%" height="100%" fill="#fff"/>
${parts.join('\n')}
</svg>
`;
}

export function chartSvg(latest) {
	const panels = [];
	const lt = latest.suites['ledger-throughput'];
	if (lt?.batches) {
		const bars = [];
		for (const b of lt.batches) {
			bars.push({ label: `${b.n.toLocaleString('en')} items · nodes`, value: b.nodeItemsPerSec, color: COLORS.ours });
			bars.push({ label: `${b.n.toLocaleString('en')} items · direct SQL`, value: b.directItemsPerSec, color: COLORS.direct });
			bars.push({ label: `${b.n.toLocaleString('en')} items · per-item SQL`, value: b.perItemItemsPerSec, color: COLORS.perItem });
		}
		panels.push({ title: 'Ledger: Reserve + Confirm throughput (items/s, median; log scale)', unit: '/s', log: true, bars });
	}
	const qt = latest.suites['queue-throughput'];
	if (qt?.rows) {
		const bars = [];
		for (const r of qt.rows) {
			const tag = `C=${r.concurrency} B=${r.batch}`;
			bars.push({ label: `${tag} · this package (5:2:1)`, value: r.ours.tasksPerSec, color: COLORS.ours });
			bars.push({ label: `${tag} · graphile-worker`, value: r['graphile-worker'].tasksPerSec, color: COLORS.graphile });
			bars.push({ label: `${tag} · pg-boss`, value: r['pg-boss'].tasksPerSec, color: COLORS.pgboss });
		}
		panels.push({ title: 'Queue: enqueue → dequeue → complete (tasks/s)', unit: '/s', bars });
	}
	const pl = latest.suites['pickup-latency'];
	if (pl?.oursMs) {
		panels.push({
			title: 'Pickup latency, enqueue to start of work (ms; log scale)',
			unit: 'ms',
			log: true,
			bars: [
				{ label: 'trigger p50', value: pl.oursMs.median, color: COLORS.ours },
				{ label: 'trigger p99', value: pl.oursMs.p99, color: COLORS.ours },
				{ label: 'graphile-worker p50', value: pl.graphileMs.median, color: COLORS.graphile },
				{ label: 'graphile-worker p99', value: pl.graphileMs.p99, color: COLORS.graphile },
				{ label: `${pl.pollingMs.intervalSeconds} s polling p50`, value: pl.pollingMs.median, color: COLORS.polling },
				{ label: `${pl.pollingMs.intervalSeconds} s polling max`, value: pl.pollingMs.max, color: COLORS.polling },
			],
		});
	}
	const scale = [];
	for (const [name, label] of [
		['ledger-scale', 'ledger'],
		['queue-scale', 'queue'],
	]) {
		const s = latest.suites[name];
		if (!s?.rows) continue;
		for (const r of s.rows) {
			scale.push({ label: `${label} ${r.kind} · ${s.sizes[0].toLocaleString('en')}`, value: r.small.median, color: COLORS.direct });
			scale.push({ label: `${label} ${r.kind} · ${s.sizes[1].toLocaleString('en')}`, value: r.large.median, color: COLORS.ours });
		}
	}
	if (scale.length) panels.push({ title: 'At scale: latency with few vs many rows (ms, median)', unit: 'ms', bars: scale });
	return render(panels);
}
