// Package pyreader holds an outside reader of Argosy's topics, written in
// Python from docs/design.md and the published JSON Schemas alone
// (reader.py, with the CloudEvents SDK, confluent-kafka, jsonschema and
// PyNaCl pinned in requirements.txt), and the integration test that runs
// it against a workload on every topic of a real broker. The reader
// checks each record's partition, binding, type, schema and signature as
// the document describes them, so a change that makes the code and the
// document disagree fails the test; if the document is what falls short,
// fix the document.
//
// Beside it, audit_verify.py checks the projector's audit chains over the
// read API, written from docs/projector.md ("Audit chain") alone with
// Python's standard library. Its test runs in cmd/argosy/internal/root
// (TestAuditVerifiableFromOutside), where a real hub and projector are
// composed; it shares this directory's virtual environment.
package pyreader
