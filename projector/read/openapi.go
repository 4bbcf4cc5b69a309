package read

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of the read API, as served at
// /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
