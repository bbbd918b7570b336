import { waitFor } from '../helpers/wait';

describe('waitFor', () => {
	it('returns the first truthy value of the predicate', async () => {
		let n = 0;
		await expect(
			waitFor(() => (++n >= 3 ? `after ${n}` : false), {
				what: 'three polls',
				intervalMs: 1,
			}),
		).resolves.toBe('after 3');
	});

	it('fails, naming what it waited for, when the predicate never holds in time', async () => {
		const started = Date.now();
		await expect(
			waitFor(() => false, {
				what: 'a notification on q_1',
				timeoutMs: 50,
				intervalMs: 5,
			}),
		).rejects.toThrow('timed out after 50 ms waiting for a notification on q_1');
		expect(Date.now() - started).toBeGreaterThanOrEqual(50);
	});

	it('ends with the error of a predicate that throws', async () => {
		await expect(
			waitFor(
				() => {
					throw new Error('boom');
				},
				{ what: 'x' },
			),
		).rejects.toThrow('boom');
	});
});
