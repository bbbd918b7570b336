import { classifyHttpResult, classifyStatus } from '../../../src/ledger/classify';

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
