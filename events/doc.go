// Package events owns Argosy's event catalogue and its wire format:
// CloudEvents 1.0 carried on Kafka records by the CloudEvents Kafka protocol
// binding (binary content mode on write; binary or structured on read),
// signed with Ed25519 over the DSSE encoding the CloudEvents verifiability
// extension describes, the signature carried compactly in the sig
// attribute (or, as before it, a DSSE envelope in dssematerial, which
// readers accept forever), validated against the JSON Schemas in package
// schemas.
//
// The pieces, from the wire up:
//   - NewMessage and WriteRecord bind a kgo.Record to sdk-go's binding
//     interfaces; partitionkey maps to the record key.
//   - Signer signs, Verifier checks signatures against a key registry
//     (Registry) that is itself built from trust events.
//   - Decoder turns a record into a verified, schema-checked, typed Decoded
//     event, or a *DecodeError naming the reason.
//   - Producer appends events durably (idempotent, acks=all) to the topic
//     the catalogue names, on the partition Partitioner chooses.
//   - Reader consumes assigned partitions, hands each decoded event to a
//     handler, dead-letters poison records (DeadLetter) and commits offsets
//     only after the handler returned.
//   - Option configures every one of them (each takes the options that
//     concern it), and Common is the options bundle that the other
//     components embed: logger, tracer and meter providers, clock margin,
//     Kafka client and decoder options, with their defaults in one place.
//   - PlanRanges and RangeReader read a fixed range of the log, read
//     committed, to its end (export, rebuilds, as-of answers, bootstraps,
//     the hub's catch-up).
//
// See docs/design.md for the topic plan and delivery guarantees.
package events
