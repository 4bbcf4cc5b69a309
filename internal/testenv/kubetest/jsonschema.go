package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
)

// WriteJSONSchemas writes into dir one JSON Schema per kind the apiserver
// serves, built-in or from a CRD installed on it, read from its OpenAPI v3
// documents: the layout kubeconform reads with the schema location
// dir/{{ .ResourceKind }}{{ .KindSuffix }}.json (deployment-apps-v1.json,
// kafka-kafka-v1.json, service-v1.json). Each schema is standalone (every
// $ref inlined) and strict, as openapi2jsonschema --strict and
// --stand-alone make them: an object with properties refuses any other
// unless its schema preserves unknown fields. Int-or-string and nullable
// become JSON Schema types. A reference back into itself (only
// apiextensions' JSONSchemaProps has one) becomes an empty schema. It
// returns the names of the files written, sorted.
func (e *Env) WriteJSONSchemas(ctx context.Context, dir string) ([]string, error) {
	c, err := rest.HTTPClientFor(e.Admin)
	if err != nil {
		return nil, err
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := getJSON(ctx, c, e.URL+"/openapi/v3", &index); err != nil {
		return nil, err
	}
	written := map[string]string{}
	for path, p := range index.Paths {
		group, version, ok := groupVersion(path)
		if !ok {
			continue
		}
		var doc struct {
			Components struct {
				Schemas map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := getJSON(ctx, c, e.URL+p.ServerRelativeURL, &doc); err != nil {
			return nil, err
		}
		if err := writeKinds(dir, group, version, doc.Components.Schemas, written); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	names := make([]string, 0, len(written))
	for n := range written {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// groupVersion parses an OpenAPI v3 path: api/v1 or apis/<group>/<version>.
func groupVersion(path string) (group, version string, ok bool) {
	parts := strings.Split(path, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		return "", parts[1], true
	case len(parts) == 3 && parts[0] == "apis":
		return parts[1], parts[2], true
	}
	return "", "", false
}

func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 512))
		return errors.Join(fmt.Errorf("GET %s: %s: %s", url, resp.Status, b), err)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// writeKinds writes the schema of each kind of group/version found in one
// OpenAPI document's components. written maps each file written to the
// component it came from: two groups with the same first label (kubeconform
// names files by it) would collide, and that is an error.
func writeKinds(dir, group, version string, components map[string]any, written map[string]string) error {
	for name, s := range components {
		m, _ := s.(map[string]any)
		gvks, _ := m["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			if gvk["group"] != group || gvk["version"] != version {
				continue
			}
			kind, _ := gvk["kind"].(string)
			file := strings.ToLower(kind) + kindSuffix(group, version) + ".json"
			if prev, ok := written[file]; ok && prev != name {
				return fmt.Errorf("%s: both %s and %s", file, prev, name)
			}
			b, err := json.Marshal(standalone(m, components, map[string]bool{name: true}))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
				return err
			}
			written[file] = name
		}
	}
	return nil
}

// kindSuffix is kubeconform's: -<first label of the group>-<version>, or
// -<version> for the core group.
func kindSuffix(group, version string) string {
	if group == "" {
		return "-" + strings.ToLower(version)
	}
	return "-" + strings.ToLower(strings.Split(group, ".")[0]) + "-" + strings.ToLower(version)
}

const refPrefix = "#/components/schemas/"

// standalone returns a copy of schema s with every reference inlined and
// the strict, int-or-string and nullable rewrites made. seen holds the
// components being inlined above s, to cut cycles.
func standalone(s any, components map[string]any, seen map[string]bool) any {
	switch s := s.(type) {
	case []any:
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = standalone(v, components, seen)
		}
		return out
	case map[string]any:
		return standaloneObject(s, components, seen)
	default:
		return s
	}
}

func standaloneObject(s map[string]any, components map[string]any, seen map[string]bool) map[string]any {
	// {allOf: [{$ref}], description, default}, as v3 wraps a reference
	// with siblings, is the referenced schema plus the siblings.
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 && s["properties"] == nil {
		if inner, ok := all[0].(map[string]any); ok {
			merged := map[string]any{}
			for k, v := range inner {
				merged[k] = v
			}
			for k, v := range s {
				if k != "allOf" {
					merged[k] = v
				}
			}
			s = merged
		}
	}
	out := map[string]any{}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, refPrefix)
		if !seen[name] {
			seen[name] = true
			if m, ok := standalone(components[name], components, seen).(map[string]any); ok {
				out = m
			}
			delete(seen, name)
		}
	}
	for k, v := range s {
		if k != "$ref" {
			out[k] = standalone(v, components, seen)
		}
	}
	rewrite(out)
	return out
}

// rewrite makes one schema node JSON Schema draft 4 as kubeconform reads
// it: int-or-string and nullable as types, and strict objects.
func rewrite(s map[string]any) {
	if s["format"] == "int-or-string" || s["x-kubernetes-int-or-string"] == true {
		s["type"] = []any{"string", "integer"}
		delete(s, "format")
		delete(s, "anyOf")
		delete(s, "oneOf")
	}
	if s["nullable"] == true {
		switch t := s["type"].(type) {
		case string:
			s["type"] = []any{t, "null"}
		case []any:
			s["type"] = append(t, "null")
		}
	}
	_, has := s["additionalProperties"]
	if s["properties"] != nil && !has && s["x-kubernetes-preserve-unknown-fields"] != true {
		s["additionalProperties"] = false
	}
}
