/**
 * SQL identifiers that come from configuration (the schema name) are validated against a strict
 * pattern and then double-quoted (PostgreSQL "Lexical Structure", 4.1.1). They are never
 * concatenated from arbitrary user text.
 */
import { cutText } from '../text';
import { CoreError } from '../errors';
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Raised for a schema name that is not a plain lower-case identifier of at most 63 bytes. Not retryable: the credential must change. */
export class InvalidSchemaNameError extends CoreError {
	readonly retryable = false;
	constructor(name: unknown) {
		super(
			`Invalid schema name ${cutText(JSON.stringify(String(name)), 80)}: use 1 to 63 characters ` +
				'from a-z, 0-9 and _, not starting with a digit (e.g. operation_ledger)',
		);
		this.name = 'InvalidSchemaNameError';
	}
}

/** Validates `name` and returns it double-quoted for use in SQL text. Throws InvalidSchemaNameError. */
export function quoteSchema(name: string): string {
	if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) throw new InvalidSchemaNameError(name);
	return `"${name}"`;
}

/**
 * The one schema convention of the core (ledger and queue): every core function takes the schema
 * as configured in the credential (`operation_ledger`) and quotes it here; the double-quoted form
 * quoteSchema() returns (`"operation_ledger"`) is accepted too. Either way the name is validated
 * (SCHEMA_NAME) at the core boundary, before it reaches SQL text. Throws InvalidSchemaNameError.
 */
export function schemaSql(schema: string): string {
	const name = typeof schema === 'string' && schema.length > 2 && schema.startsWith('"') && schema.endsWith('"') ? schema.slice(1, -1) : schema;
	return quoteSchema(name);
}

/** The schema-qualified name of a database function, e.g. "operation_ledger".queue_claim. */
export function sqlFunction(schema: string, name: string): string {
	return `${schemaSql(schema)}.${name}`;
}
