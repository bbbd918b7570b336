/**
 * Whether the ledger's promise survives a failover of this server, read from what any role can see.
 *
 * The promise ("a write the ledger granted is never granted again; an outcome it reported as
 * recorded stays recorded") holds on one server restarted in place. Across a failover it holds only
 * when every commit the nodes were told about is on the server that is promoted: synchronous
 * replication (synchronous_standby_names lists the standby, synchronous_commit = on, remote_write
 * or remote_apply) and a failover to that standby only. docs/high-availability.md has the measured
 * figures and the setups.
 *
 * readReplication() runs one read-only statement (bounded like every statement, src/db/bounds.ts):
 * pg_is_in_recovery(), the settings default_transaction_read_only, transaction_read_only,
 * synchronous_commit (as this role's sessions have it), synchronous_standby_names, and the rows of
 * pg_stat_replication (logical replication senders excluded, via pg_replication_slots). Every role
 * can read those, but pg_stat_replication shows the details of a standby (name, state, sync_state,
 * lag) only to roles with the privileges of pg_read_all_stats (pg_monitor includes it) or a
 * superuser; other roles see one row per standby connection without them. assessReplication() then
 * says what is known and what is not (verdict 'unknown' when only the details would tell).
 *
 * Sources: PostgreSQL documentation, "Synchronous Replication" (26.2.8), "synchronous_commit" and
 * "synchronous_standby_names" (20.5.1, 20.6.2), "pg_stat_replication" (28.2.4: "only superusers
 * and roles with privileges of the pg_read_all_stats role" see the details), "Predefined Roles".
 */
import { boundedQuery, type Bounds } from './bounds';
import type { Queryable } from './values';

/** One standby as pg_stat_replication shows it (details are null without pg_read_all_stats). */
export interface StandbyInfo {
	/** application_name the standby connected with (its cluster_name, or primary_conninfo's application_name). */
	name: string | null;
	/** startup, catchup, streaming, backup or stopping. */
	state: string | null;
	/** async, potential, sync or quorum (PostgreSQL's terms). */
	syncState: string | null;
	/** replay_lag in milliseconds (null when idle or not visible). */
	replayLagMs: number | null;
}

/** What readReplication() read. */
export interface ReplicationState {
	inRecovery: boolean;
	defaultTransactionReadOnly: boolean;
	transactionReadOnly: boolean;
	/** off, local, remote_write, on or remote_apply, as this role's sessions have it. */
	synchronousCommit: string;
	/** '' when no synchronous standby is configured. */
	synchronousStandbyNames: string;
	/** The role the connection runs as (for the advice). */
	currentUser: string;
	/** Whether this role sees pg_stat_replication's details (privileges of pg_read_all_stats). */
	detailsVisible: boolean;
	/** server_version_num (e.g. 150019). */
	serverVersionNum: number;
	/** Whether the role inherits the privileges of roles it is a member of (rolinherit). */
	inherits: boolean;
	/** Physical standby connections (walsenders not serving a logical slot), with details when visible. */
	standbys: StandbyInfo[];
}

/**
 * What the state means for the promise.
 * - `standby`: the server is in recovery (read-only); the nodes cannot write here.
 * - `read_only`: sessions of this role are read-only (default_transaction_read_only).
 * - `writes_blocked`: commits wait for a synchronous standby that is not connected, so every write
 *   waits until the package gives up (Statement Timeout + DEFAULTS.syncRepCancelMarginMs).
 * - `asynchronous`: standbys stream, but commits do not wait for them: a failover to one may lose
 *   the last outcomes the nodes reported as recorded.
 * - `unknown`: synchronous replication is configured and standbys are connected, but this role
 *   cannot see whether they are the synchronous ones.
 * - `synchronous`: commits wait for at least one connected synchronous standby; a failover to one
 *   of those keeps every reported outcome.
 * - `single_server`: no standby streams from this server; the promise holds for this server
 *   restarted in place (and for a platform's own copy only if that copy is synchronous).
 */
export type ReplicationVerdict = 'standby' | 'read_only' | 'writes_blocked' | 'asynchronous' | 'unknown' | 'synchronous' | 'single_server';

export interface ReplicationReport {
	verdict: ReplicationVerdict;
	role: 'primary' | 'standby';
	/** Whether the nodes can write on this server now. */
	writable: boolean;
	/** true: a failover to a synchronous standby keeps every reported outcome; false: a failover can lose some; null: not known from here. */
	failoverSafe: boolean | null;
	readOnly: boolean;
	synchronousCommit: string;
	synchronousStandbyNames: string;
	standbys: {
		/** Physical standby connections. */
		count: number;
		/** Connected standbys whose sync_state is sync or quorum; null when not visible to this role. */
		synchronous: number | null;
		detailsVisible: boolean;
		/** Each standby; null when this role cannot see the details. */
		list: StandbyInfo[] | null;
	};
	/** One paragraph: what holds and what does not. */
	message: string;
	/** What to change, each a sentence (empty when nothing needs to change). */
	advice: string[];
	/** What this role could not see. */
	unknown: string[];
}

/** synchronous_commit levels whose commit waits for the synchronous standbys (when any are named). */
const WAITING_LEVELS = new Set(['on', 'remote_write', 'remote_apply']);

const on = (v: unknown) => v === 'on' || v === true;

/**
 * Reads the server's replication state in one bounded read-only statement.
 * Throws what boundedQuery throws (connection errors, LedgerBusyError).
 */
export async function readReplication(db: Queryable, bounds?: Bounds): Promise<ReplicationState> {
	const rows = await boundedQuery<{
		in_recovery: boolean;
		default_ro: string;
		tx_ro: string;
		sync_commit: string;
		sync_names: string;
		current_user: string;
		details: boolean;
		version: number;
		inherits: boolean | null;
		standbys: Array<{ name: string | null; state: string | null; sync_state: string | null; replay_lag_ms: number | null }>;
	}>(
		db,
		`SELECT pg_is_in_recovery() AS in_recovery,
		        current_setting('default_transaction_read_only') AS default_ro,
		        current_setting('transaction_read_only') AS tx_ro,
		        current_setting('synchronous_commit') AS sync_commit,
		        current_setting('synchronous_standby_names') AS sync_names,
		        current_user::text AS current_user,
		        pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS details,
		        current_setting('server_version_num')::int AS version,
		        (SELECT rolinherit FROM pg_roles WHERE rolname = current_user) AS inherits,
		        (SELECT coalesce(jsonb_agg(jsonb_build_object(
		                    'name', r.application_name, 'state', r.state, 'sync_state', r.sync_state,
		                    'replay_lag_ms', round(extract(epoch FROM r.replay_lag) * 1000))
		                  ORDER BY r.pid), '[]'::jsonb)
		           FROM pg_stat_replication r
		          WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots s WHERE s.active_pid = r.pid AND s.slot_type = 'logical')) AS standbys`,
		[],
		bounds,
	);
	const r = rows[0];
	return {
		inRecovery: r.in_recovery === true,
		defaultTransactionReadOnly: on(r.default_ro),
		transactionReadOnly: on(r.tx_ro),
		synchronousCommit: String(r.sync_commit),
		synchronousStandbyNames: String(r.sync_names ?? '').trim(),
		currentUser: String(r.current_user),
		detailsVisible: r.details === true,
		serverVersionNum: Number(r.version),
		inherits: r.inherits !== false,
		standbys: (r.standbys ?? []).map((s) => ({
			name: s.name ?? null,
			state: s.state ?? null,
			syncState: s.sync_state ?? null,
			replayLagMs: s.replay_lag_ms === null || s.replay_lag_ms === undefined ? null : Number(s.replay_lag_ms),
		})),
	};
}

/** A role name as an SQL identifier in the advice (quoted when it is not plain lower case). */
function ident(name: string): string {
	return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * The grant that lets `s.currentUser` see pg_stat_replication's details. A NOINHERIT role (as
 * schema/security's roles are) gets no privileges from a plain GRANT: PostgreSQL 16 and later
 * grant with INHERIT TRUE; older versions need the role to inherit (ALTER ROLE … INHERIT, which
 * applies to every role it is a member of). Source: PostgreSQL documentation, "GRANT" and "Role
 * Membership".
 */
export function monitorGrant(s: Pick<ReplicationState, 'currentUser' | 'serverVersionNum' | 'inherits'>): string {
	const role = ident(s.currentUser);
	if (s.inherits) return `GRANT pg_monitor TO ${role}`;
	if (s.serverVersionNum >= 160000) return `GRANT pg_monitor TO ${role} WITH INHERIT TRUE`;
	return `GRANT pg_monitor TO ${role}; ALTER ROLE ${role} INHERIT (the role is NOINHERIT, and before PostgreSQL 16 a grant cannot inherit by itself: check its other memberships first)`;
}

/** What `s` means for the promise, with what to change. Pure: the rules of ReplicationVerdict. */
export function assessReplication(s: ReplicationState): ReplicationReport {
	const count = s.standbys.length;
	const synchronous = s.detailsVisible ? s.standbys.filter((b) => b.syncState === 'sync' || b.syncState === 'quorum').length : null;
	const readOnly = s.defaultTransactionReadOnly || s.transactionReadOnly;
	const base = {
		role: s.inRecovery ? ('standby' as const) : ('primary' as const),
		readOnly: readOnly || s.inRecovery,
		synchronousCommit: s.synchronousCommit,
		synchronousStandbyNames: s.synchronousStandbyNames,
		standbys: { count, synchronous, detailsVisible: s.detailsVisible, list: s.detailsVisible ? s.standbys : null },
	};
	const unknown: string[] = [];
	if (!s.detailsVisible && count > 0) {
		unknown.push(
			`which of the ${count} standby connection(s) are synchronous, their names and lag: pg_stat_replication shows them only to roles with the privileges of pg_read_all_stats (${monitorGrant(s)}) or a superuser`,
		);
	}
	const role = ident(s.currentUser);
	const report = (verdict: ReplicationVerdict, writable: boolean, failoverSafe: boolean | null, message: string, advice: string[]): ReplicationReport => ({
		verdict,
		...base,
		writable,
		failoverSafe,
		message,
		advice,
		unknown,
	});

	if (s.inRecovery) {
		return report('standby', false, null, 'This server is a standby in recovery (pg_is_in_recovery() is true): it is read-only, so every Reserve, Confirm and queue write fails here.', [
			"Point the credential at the primary's writer endpoint (the address that always leads to the current primary), never at a replica or reader endpoint.",
		]);
	}
	if (readOnly) {
		return report(
			'read_only',
			false,
			null,
			`Sessions of role ${role} are read-only (default_transaction_read_only = on): every Reserve, Confirm and queue write fails here.`,
			[`Connect to the writer endpoint, or let the role write: ALTER ROLE ${role} SET default_transaction_read_only = off (or the same at the database), then reconnect.`],
		);
	}
	const names = s.synchronousStandbyNames;
	const waits = names !== '' && WAITING_LEVELS.has(s.synchronousCommit);
	if (waits) {
		if (count === 0 || synchronous === 0) {
			const seen = count === 0 ? 'no standby is connected' : `none of the ${count} connected standby(s) is a synchronous one (sync_state: ${s.standbys.map((b) => `${b.name ?? '?'} ${b.syncState ?? '?'}`).join(', ')})`;
			return report(
				'writes_blocked',
				false,
				null,
				`Every commit waits for a synchronous standby (synchronous_standby_names = '${names}', synchronous_commit = ${s.synchronousCommit}), and ${seen}: ` +
					'every write waits until the nodes give up (Statement Timeout + 1 s) and fails with "waiting for synchronous replication". A standby promoted with the setting it inherited and no standby of its own looks like this.',
				[
					'Connect a standby whose name synchronous_standby_names lists (the new primary needs its own synchronous standby).',
					`Or, knowingly giving up synchronous replication until one is back (outcomes then survive only this server): ALTER SYSTEM SET synchronous_standby_names = ''; SELECT pg_reload_conf();`,
				],
			);
		}
		if (synchronous === null) {
			return report(
				'unknown',
				true,
				null,
				`Commits wait for a synchronous standby (synchronous_standby_names = '${names}', synchronous_commit = ${s.synchronousCommit}) and ${count} standby connection(s) exist, but this role cannot see whether they are the synchronous ones.`,
				[`To let the credential test and Health tell: ${monitorGrant(s)} (pg_monitor reads statistics only).`],
			);
		}
		const asyncOnes = s.standbys.filter((b) => b.syncState !== 'sync' && b.syncState !== 'quorum');
		const advice = [
			`Fail over only to a synchronous standby (${s.standbys.filter((b) => !asyncOnes.includes(b)).map((b) => b.name ?? '?').join(', ')}), and give the new primary a synchronous standby of its own before it takes writes.`,
		];
		if (asyncOnes.length) advice.push(`Never promote an asynchronous one (${asyncOnes.map((b) => `${b.name ?? '?'} ${b.syncState ?? '?'}`).join(', ')}): it may lack the last outcomes.`);
		const note =
			s.synchronousCommit === 'remote_write'
				? ' (synchronous_commit = remote_write: the standby has each commit in its operating system, not yet on its disk; a failover after the primary alone fails keeps it)'
				: '';
		return report(
			'synchronous',
			true,
			true,
			`Commits wait for ${synchronous} synchronous standby(s) (synchronous_standby_names = '${names}', synchronous_commit = ${s.synchronousCommit})${note}: a failover to one of them keeps every outcome the nodes reported.`,
			advice,
		);
	}
	if (names !== '') {
		// Named, but this role's commits do not wait (synchronous_commit off or local).
		return report(
			'asynchronous',
			true,
			false,
			`Synchronous standbys are configured (synchronous_standby_names = '${names}'), but the commits of role ${role} do not wait for them (synchronous_commit = ${s.synchronousCommit}): ` +
				'a failover can lose the last outcomes the nodes reported as recorded, so the ledger may grant a write twice and the queue may lose or rerun tasks.',
			[`ALTER ROLE ${role} SET synchronous_commit = on (or remote_apply), then reconnect.`],
		);
	}
	if (count > 0) {
		return report(
			'asynchronous',
			true,
			false,
			`${count} standby(s) stream from this server asynchronously (synchronous_standby_names is empty): a failover to one of them can lose the last outcomes the nodes reported as recorded, ` +
				'so the ledger may grant a write twice and the queue may lose or rerun tasks.',
			[
				`Make the standby that will be promoted synchronous: ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (<its application_name>)'; SELECT pg_reload_conf(); keep synchronous_commit = on or remote_apply, and fail over only to it.`,
				'Or, if asynchronous replication is a deliberate choice, reconcile after every failover (docs/high-availability.md, "After an asynchronous failover").',
			],
		);
	}
	return report(
		'single_server',
		true,
		null,
		'No standby streams from this server: every outcome the nodes report survives this server restarting in place. A failover to a copy made another way (storage-level replication of a managed service) keeps them only if that copy is synchronous.',
		[],
	);
}
