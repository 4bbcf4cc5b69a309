package schemas

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// BaseURL prefixes every schema's $id and every event's dataschema attribute.
const BaseURL = "https://argosy.dev/schemas/events/"

//go:embed json/*.json
var jsonFiles embed.FS

//go:embed baseline/*.json
var baselineFiles embed.FS

// AsyncAPI is the AsyncAPI 3 document describing Argosy's topics and messages.
//
//go:embed asyncapi.yaml
var AsyncAPI []byte

// OpenAPI is the OpenAPI 3.1 document of /api/v1, the one contract of the
// hub's API and the projector's read API: every path of both, one Error
// for every error answer of either. The read API serves it at
// /api/v1/openapi.yaml, the hub also as JSON at /openapi.json; hub/api is
// its Go client.
//
//go:embed openapi.yaml
var OpenAPI []byte

// URL returns the $id of the JSON Schema for an event type, which is also the
// value of the event's dataschema attribute.
func URL(eventType string) string { return BaseURL + eventType + ".json" }

// TypeFromURL returns the event type a schema URL names, or false.
func TypeFromURL(url string) (string, bool) {
	t, ok := strings.CutPrefix(url, BaseURL)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(t, ".json")
}

// JSON returns the JSON Schema of an event type's data.
func JSON(eventType string) ([]byte, error) {
	b, err := jsonFiles.ReadFile("json/" + eventType + ".json")
	if err != nil {
		return nil, fmt.Errorf("schema for %q: %w", eventType, err)
	}
	return b, nil
}

// Files returns the current JSON Schemas, one file per event type named
// "<type>.json".
func Files() fs.FS { return dirFS{jsonFiles, "json"} }

// Baselines returns the JSON Schemas as last released, one file per event
// type. A current schema must stay compatible with its baseline.
func Baselines() fs.FS { return dirFS{baselineFiles, "baseline"} }

// dirFS is one directory of an embed.FS.
type dirFS struct {
	fsys embed.FS
	dir  string
}

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return d.fsys.Open(path.Join(d.dir, name))
}
