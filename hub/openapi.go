package hub

import (
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/schemas"
)

// OpenAPI returns the OpenAPI 3.1 document of /api/v1 (schemas.OpenAPI,
// the hub's routes and the read API's in one contract) as the JSON the hub
// serves at /openapi.json. It converts the document once.
func OpenAPI() ([]byte, error) { return openAPIJSON() }

var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	return yaml.YAMLToJSON(schemas.OpenAPI)
})
