// Package schemas owns Argosy's published wire contract: the Go types of every
// event's data, the JSON Schema (2020-12) for each of them, and the AsyncAPI 3
// document that describes the topics, keys, headers and messages.
//
// Everything here is embedded in the binary and depends on the standard
// library only, so that any package (and any outside reader of the schema
// files) can use it without pulling in the rest of Argosy.
package schemas
