/**
 * SQL identifiers that come from configuration (the schema name) are validated against a strict
 * pattern and then double-quoted (PostgreSQL "Lexical Structure", 4.1.1). They are never
 * concatenated from arbitrary user text.
 *
 * The schema is validated and quoted once, where a connection is opened (nodes/shared/connection.ts
 * openLedgerConnection for every node and the trigger; a direct caller of the core, such as a test,
 * a benchmark or a script, calls ledgerSchema() once), and travels from there as a LedgerSchema:
 * every core function and the migrator take that value, and sqlFunction() reads its quoted form
 * without validating it again. A raw string does not type-check at the core boundary, and one that
 * reaches it anyway (plain JavaScript, a cast) is refused before it can become SQL text.
 */
import { cutText } from '../text';
import { CoreError } from '../errors';
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Raised for a schema name that is not a plain lower-case identifier of at most 63 bytes. Not retryable: the credential must change. */
export class InvalidSchemaNameError extends CoreError {
	readonly retryable = false;
	constructor(name: unknown, why = 'use 1 to 63 characters from a-z, 0-9 and _, not starting with a digit (e.g. operation_ledger)') {
		super(`Invalid schema name ${cutText(JSON.stringify(String(name)), 80)}: ${why}`);
		this.name = 'InvalidSchemaNameError';
	}
}

declare const validated: unique symbol;

/**
 * A schema name validated and double-quoted once, by ledgerSchema(). Frozen; the brand means only
 * ledgerSchema() makes one (an object literal with the same fields does not type-check).
 */
export interface LedgerSchema {
	/** The name as configured in the credential, e.g. `operation_ledger` (messages, lock keys, LISTEN channels). */
	readonly name: string;
	/** The name double-quoted for SQL text, e.g. `"operation_ledger"`. */
	readonly sql: string;
	readonly [validated]: true;
}

/** Every LedgerSchema ledgerSchema() made: sqlFunction() refuses anything else. */
const made = new WeakSet<object>();

/**
 * The one constructor of a LedgerSchema, and the one place the schema name is validated: `name`
 * as configured (`operation_ledger`: 1 to 63 characters from a-z, 0-9 and _, not starting with a
 * digit; no quotes). Call it once per connection and pass the value to every core call.
 * @throws InvalidSchemaNameError (not retryable) for any other name.
 */
export function ledgerSchema(name: string): LedgerSchema {
	if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) throw new InvalidSchemaNameError(name);
	const schema = Object.freeze({ name, sql: `"${name}"` }) as LedgerSchema;
	made.add(schema);
	return schema;
}

/**
 * The quoted form of a schema ledgerSchema() made (`"operation_ledger"`), without validating it
 * again. Anything else (a raw string, a copied object) is refused before it can reach SQL text.
 * @throws InvalidSchemaNameError (not retryable) for a value ledgerSchema() did not make.
 */
export function schemaSql(schema: LedgerSchema): string {
	if (typeof schema !== 'object' || schema === null || !made.has(schema)) {
		throw new InvalidSchemaNameError(schema, 'a core function takes the value ledgerSchema() returns (src/db/identifiers.ts), not a string');
	}
	return schema.sql;
}

/** The schema-qualified name of a database function, e.g. "operation_ledger".queue_claim. Throws as schemaSql(). */
export function sqlFunction(schema: LedgerSchema, name: string): string {
	return `${schemaSql(schema)}.${name}`;
}
