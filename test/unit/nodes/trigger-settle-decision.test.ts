/**
 * Settle Tasks "When the Execution Finishes": the run's status decides complete / fail / nothing
 * (nodes/PriorityDequeueTrigger/settleOnFinish.ts settleDecision). Only a finished success
 * completes; every n8n execution status is covered, and a missing run.
 */
import type { IRun } from 'n8n-workflow';
import { settleDecision } from '../../../nodes/PriorityDequeueTrigger/settleOnFinish';

const run = (status: string | undefined, extra: Record<string, unknown> = {}): IRun =>
	({ status, finished: status === 'success', mode: 'trigger', startedAt: new Date(), data: { resultData: { runData: {} } }, ...extra }) as unknown as IRun;
const withError = (status: string, message?: string): IRun => run(status, { finished: false, data: { resultData: { runData: {}, error: message === undefined ? {} : { message } } } });

describe('settleDecision', () => {
	test('a finished success completes', () => {
		expect(settleDecision(run('success'))).toEqual({ action: 'complete' });
	});

	test.each(['error', 'crashed', 'canceled'])('status %s fails, with the run error message when there is one', (status) => {
		expect(settleDecision(withError(status, 'Work: boom'))).toEqual({ action: 'fail', error: 'Work: boom' });
		expect(settleDecision(run(status))).toEqual({ action: 'fail', error: `the execution ended with status ${status}` });
	});

	test('an error in the result fails even when the status says success', () => {
		expect(settleDecision(withError('success', 'late error'))).toEqual({ action: 'fail', error: 'late error' });
		expect(settleDecision(run('success', { data: { resultData: { runData: {}, error: { message: '' } } } }))).toEqual({
			action: 'fail',
			error: 'the execution ended with status success',
		});
	});

	test.each(['waiting', 'running', 'new', 'unknown', 'paused-by-someone'])('status %s does nothing', (status) => {
		const d = settleDecision(run(status));
		expect(d.action).toBe('none');
		expect(d).toHaveProperty('why', `the execution's status is "${status}"`);
	});

	test('no run, no status, or a success that is not finished does nothing', () => {
		expect(settleDecision(undefined)).toEqual({ action: 'none', why: 'n8n reported no run object for the execution' });
		expect(settleDecision(run(undefined))).toEqual({ action: 'none', why: "the execution's status is not given" });
		expect(settleDecision(run('success', { finished: false }))).toEqual({ action: 'none', why: 'the run says success but not finished' });
		expect(settleDecision(run('success', { finished: undefined }))).toMatchObject({ action: 'none' });
	});

	test('a run without data still decides by its status', () => {
		expect(settleDecision({ status: 'success', finished: true } as unknown as IRun)).toEqual({ action: 'complete' });
		expect(settleDecision({ status: 'error' } as unknown as IRun)).toEqual({ action: 'fail', error: 'the execution ended with status error' });
	});
});
