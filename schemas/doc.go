// Package schemas owns Argosy's published wire contract: the Go types of every
// event's data, the JSON Schema (2020-12) for each of them, the AsyncAPI 3
// document that describes the topics, keys, headers and messages, and the
// OpenAPI 3.1 document of /api/v1, which the hub and the projector's read
// API both serve (it lives here, below both, because the projector may not
// import the hub).
//
// Everything here is embedded in the binary and depends on the standard
// library only, so that any package (and any outside reader of the schema
// files) can use it without pulling in the rest of Argosy.
package schemas
