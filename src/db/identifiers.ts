/**
 * SQL identifiers that come from configuration (the schema name) are validated against a strict
 * pattern and then double-quoted (PostgreSQL "Lexical Structure", 4.1.1). They are never
 * concatenated from arbitrary user text.
 */
import { cutText } from '../text';
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Raised for a schema name that is not a plain lower-case identifier of at most 63 bytes. */
export class InvalidSchemaNameError extends Error {
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
