package hub

import _ "embed"

//go:generate go run ./internal/openapigen

// OpenAPI is the OpenAPI 3.1 document of the hub's whole API, the read
// routes included, as served at /openapi.json. It is generated: the hub's
// own routes are documented in openapi.yaml, the read API's in
// projector/read/openapi.yaml, and internal/openapigen merges the two.
//
//go:embed openapi.json
var OpenAPI []byte
