// Package sqlstore keeps the projector's views in SQL: SQLite through
// modernc.org/sqlite (pure Go, no cgo), the embedded default, and
// PostgreSQL through pgx, for production. One Store type implements
// projector.Store and projector.Query over database/sql for both; the SQL
// is shared, and what differs between the engines (placeholders, column
// types, the migration lock) is in a small dialect.
//
// # Exactly once
//
// Commit writes a Batch's rows and the next offset of every partition it
// read in one transaction: a crash loses the rows and the offsets
// together, and the step is folded again from the stored offsets. Rows are
// upserts; the append-only tables (acks, calls, audit entries, deployments,
// gaps) are keyed by what identifies the event, so a record folded twice
// leaves one row.
//
// Offsets never move backwards, and a batch that names where its step
// began (Batch.From) is a compare-and-set on it. Several replicas share the
// partitions through the consumer group, over one PostgreSQL; after a
// rebalance a replica that lost a partition may still hold a batch of it.
// If the stored offset of any partition of a batch is no longer the one
// its step began at, or is beyond the batch's offset, Commit fails with
// ErrStaleOffset and the whole transaction rolls back: the zombie is
// fenced, and the caller drops its working set and rejoins. The
// offset rows are written first, in a fixed order, so two replicas
// committing the same partition serialize on its row.
//
// # Encoding
//
// Times are stored as integer nanoseconds since the Unix epoch, UTC, and
// read back in UTC: PostgreSQL's timestamptz keeps microseconds only, and
// the audit chain hashes each entry's time with nanoseconds. A zero time is
// NULL. Times before 1678 or after 2262 cannot be stored.
//
// Nested structs (labels, sync, health, operation, conditions, resources,
// the heartbeat's counts, a rejection, images, a call's event ids) are JSON
// columns (jsonb in PostgreSQL, text in SQLite), encoded with
// encoding/json; a nil map, slice or pointer is NULL. Raw JSON that comes
// back byte for byte (an Application's spec and an audit entry's before
// and after, which a later fold step copies into the next entry) is stored
// as bytes (bytea, blob), not jsonb, which would reorder keys and spaces.
// The audit chain hashes before and after in canonical form, so their
// bytes are not what it depends on.
//
// # Schema
//
// Migrations are numbered and applied at open, each once, recorded in
// table schema_version. A migration is SQL statements and, where SQL alone
// cannot do it, a Go step in the same transaction: version 8 rehashes the
// audit chains with before and after in canonical form (rechain). In
// PostgreSQL the migration transaction takes an advisory lock first, so
// replicas opening the same database at once apply them one after the
// other.
package sqlstore
