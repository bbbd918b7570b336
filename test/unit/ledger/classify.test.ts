import { classifyHttpResult, classifyStatus, parseStatusOverrides, STATUS_TABLE, statusRule, type StatusOverrides } from '../../../src/ledger/classify';
import { classifyLookup } from '../../../src/ledger/reconcile/lookup';

describe('classifyStatus', () => {
	it.each([
		[200, 'succeeded'],
		[201, 'succeeded'],
		[204, 'succeeded'],
		[400, 'failed'],
		[402, 'failed'],
		[404, 'failed'],
		[422, 'failed'],
		[408, 'unknown'],
		[409, 'unknown'],
		[425, 'failed'],
		[429, 'failed'],
		[401, 'failed'],
		[403, 'failed'],
		[500, 'unknown'],
		[502, 'unknown'],
		[503, 'unknown'],
		[504, 'unknown'],
		[302, 'unknown'],
	])('HTTP %i is %s', (status, outcome) => {
		expect(classifyStatus(status).outcome).toBe(outcome);
	});

	it('marks definite client errors as not retryable', () => {
		expect(classifyStatus(422)).toMatchObject({ outcome: 'failed', retryable: false });
	});
});

describe('classifyHttpResult', () => {
	it('treats a bare body (the HTTP Request node default for 2xx) as success and stores it', () => {
		const c = classifyHttpResult({ id: 'pay_1', status: 'succeeded' });
		expect(c).toMatchObject({ outcome: 'succeeded', body: { id: 'pay_1', status: 'succeeded' } });
	});

	it('reads the full-response shape', () => {
		expect(classifyHttpResult({ statusCode: 201, headers: {}, body: { id: 'x' } })).toMatchObject({ outcome: 'succeeded', statusCode: 201, body: { id: 'x' } });
		expect(classifyHttpResult({ statusCode: 503, headers: {}, body: 'busy' })).toMatchObject({ outcome: 'unknown', statusCode: 503 });
		expect(classifyHttpResult({ statusCode: 400, headers: {}, body: {} })).toMatchObject({ outcome: 'failed', retryable: false });
	});

	it.each([
		[{ error: { message: '504 - "Gateway Timeout"', httpCode: '504' } }, 'unknown', false],
		[{ error: { message: 'Bad request', httpCode: '400' } }, 'failed', false],
		[{ error: { message: 'x', status: 429 } }, 'failed', true],
		[{ error: { message: '401 - Unauthorized', httpCode: '401' } }, 'failed', true],
		[{ error: { message: 'x', response: { status: 402 } } }, 'failed', false],
		[{ error: { message: 'timeout of 10000ms exceeded', code: 'ECONNABORTED' } }, 'unknown', false],
		[{ error: { message: 'socket hang up', code: 'ECONNRESET' } }, 'unknown', false],
		[{ error: { message: 'connect ECONNREFUSED 127.0.0.1:4010' } }, 'failed', true],
		[{ error: { message: 'getaddrinfo ENOTFOUND payments.invalid' } }, 'failed', true],
		[{ error: 'Something odd happened' }, 'unknown', false],
		[{ error: { message: 'The connection timed out' } }, 'unknown', false],
		[{ error: { message: '503 - "Service Unavailable"' } }, 'unknown', false],
	])('classifies error item %j as %s (retryable %s)', (json, outcome, retryable) => {
		const c = classifyHttpResult(json as Record<string, unknown>);
		expect(c.outcome).toBe(outcome);
		expect(c.retryable).toBe(retryable);
		expect(c.reason).toBeTruthy();
	});
});

describe('the reason text of an HTTP Request node error item', () => {
	it('names the code and the message once, although the item repeats them in its cause', () => {
		// The shape n8n 2.33.7's HTTP Request node emits under "Continue" for a refused connection.
		const cause = { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:4010', name: 'Error' };
		const c = classifyHttpResult({ error: { ...cause, cause } });
		expect(c).toMatchObject({ outcome: 'failed', retryable: true });
		expect(c.reason).toBe('Not delivered: ECONNREFUSED connect ECONNREFUSED 127.0.0.1:4010');
	});
	it('keeps a description and a specific error name, and survives a cause that points back at the error', () => {
		const err: Record<string, unknown> = { message: 'Bad request', description: 'amount must be positive', name: 'NodeApiError', httpCode: '400' };
		err.cause = err;
		expect(classifyHttpResult({ error: err }).reason).toMatch(/\(Bad request amount must be positive NodeApiError\)$/);
	});
});

describe('the HTTP classification table (could the request have taken effect?)', () => {
	it.each([
		[401, 'failed', true],
		[403, 'failed', true],
		[429, 'failed', true],
		[425, 'failed', true],
		[423, 'failed', true],
		[400, 'failed', false],
		[404, 'failed', false],
		[418, 'failed', false],
		[408, 'unknown', false],
		[409, 'unknown', false],
		[500, 'unknown', false],
		[599, 'unknown', false],
		[302, 'unknown', false],
		[204, 'succeeded', false],
	])('HTTP %i → %s (retryable %s)', (status, outcome, retryable) => {
		expect(classifyStatus(status)).toMatchObject({ outcome, retryable });
	});

	it('every table row names its source', () => {
		for (const [code, rule] of Object.entries(STATUS_TABLE)) {
			expect(rule.why).toMatch(/RFC \d+|draft-/);
			expect(statusRule(Number(code))).toBe(rule);
		}
	});

	it('overrides apply per status code, in all shapes', () => {
		const o = parseStatusOverrides('409=failed, 402=failed_retryable\n503=succeeded, 429=unknown') as StatusOverrides;
		expect(classifyStatus(409, o)).toMatchObject({ outcome: 'failed', retryable: false });
		expect(classifyStatus(402, o)).toMatchObject({ outcome: 'failed', retryable: true });
		expect(classifyStatus(429, o)).toMatchObject({ outcome: 'unknown' });
		expect(classifyHttpResult({ statusCode: 503, headers: {}, body: { ok: 1 } }, o)).toMatchObject({ outcome: 'succeeded', body: { ok: 1 } });
		expect(classifyHttpResult({ error: { message: 'x', httpCode: '402' } }, o)).toMatchObject({ outcome: 'failed', retryable: true });
		expect(classifyStatus(500, o)).toMatchObject({ outcome: 'unknown' });
	});

	it.each(['409', '409=maybe', '99=failed', 'abc=failed', '409=failed;410=failed'])('rejects the malformed override %j', (text) => {
		expect(() => parseStatusOverrides(text)).toThrow(/Status code override/);
	});

	it('lookup overrides per status code (Resolve)', () => {
		const o = parseStatusOverrides('404=still_unknown, 422=not_happened, 202=happened', ['happened', 'not_happened', 'still_unknown']);
		expect(classifyLookup({ error: { message: '404 - nope', httpCode: '404' } }, null, o).resolution).toBe('still_unknown');
		expect(classifyLookup({ statusCode: 422, body: {} }, null, o).resolution).toBe('not_happened');
		expect(classifyLookup({ statusCode: 410, body: {} }, null, o).resolution).toBe('not_happened');
		expect(classifyLookup({ statusCode: 202, body: { id: 'p' } }, 'p', o).resolution).toBe('happened');
		expect(classifyLookup({ statusCode: 202, body: {} }, '', o).resolution).toBe('still_unknown');
		expect(() => parseStatusOverrides('404=failed', ['happened', 'not_happened', 'still_unknown'])).toThrow();
	});
});
