// Command openapigen writes hub/openapi.json, the one OpenAPI document of
// everything the hub serves: its own routes (hub/openapi.yaml) and the
// projector's read API (projector/read/openapi.yaml), which the hub mounts
// behind its bearer token. go generate runs it in hub/, and make verify
// fails when the committed file differs from what it writes.
//
// The merge keeps the hub's info, security and servers, adds the read
// API's paths, tags and components under their own names, and fails on
// any name both documents use. Each read operation gets the hub's security
// requirement and the answers the hub gives before the read API sees the
// call (401, 403, 429, 503).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"

	"sigs.k8s.io/yaml"
)

func main() {
	hubDoc := flag.String("hub", "openapi.yaml", "the hub's own OpenAPI document")
	readDoc := flag.String("read", "../projector/read/openapi.yaml", "the read API's OpenAPI document")
	out := flag.String("o", "openapi.json", "the merged document to write")
	flag.Parse()
	if err := run(*hubDoc, *readDoc, *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(hubPath, readPath, outPath string) error {
	b, err := generate(hubPath, readPath)
	if err != nil {
		return err
	}
	return os.WriteFile(outPath, b, 0o644)
}

// generate returns the merged document of the two files as indented JSON
// with sorted keys.
func generate(hubPath, readPath string) ([]byte, error) {
	hub, err := load(hubPath)
	if err != nil {
		return nil, err
	}
	read, err := load(readPath)
	if err != nil {
		return nil, err
	}
	doc, err := merge(hub, read)
	if err != nil {
		return nil, fmt.Errorf("merging %s into %s: %w", readPath, hubPath, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// load reads a YAML document as the JSON data model, numbers kept as
// written.
func load(path string) (map[string]any, error) {
	y, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// What the hub adds to each read operation: its security scheme, and its
// own answers by status, as components of the hub's document.
const securityScheme = "bearer"

var hubAnswers = map[string]string{
	"401": "Unauthenticated",
	"403": "Denied",
	"429": "TooManyUnauthenticated",
	"503": "Unavailable",
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// merge returns the hub's document with the read API's merged in; it
// changes neither argument.
func merge(hub, read map[string]any) (map[string]any, error) {
	for k := range read {
		if !slices.Contains([]string{"openapi", "info", "jsonSchemaDialect", "tags", "paths", "components"}, k) {
			return nil, fmt.Errorf("the read API's document has %q, which the merge does not know how to combine", k)
		}
	}
	for _, k := range []string{"openapi", "jsonSchemaDialect"} {
		if v, ok := read[k]; ok && !reflect.DeepEqual(v, hub[k]) {
			return nil, fmt.Errorf("%s: the hub's document has %v, the read API's %v", k, hub[k], v)
		}
	}
	out := maps.Clone(hub)
	if err := checkHubComponents(hub); err != nil {
		return nil, err
	}
	tags, err := mergeTags(list(hub["tags"]), list(read["tags"]))
	if err != nil {
		return nil, err
	}
	if len(tags) > 0 {
		out["tags"] = tags
	}
	if out["paths"], err = mergePaths(mapping(hub["paths"]), mapping(read["paths"])); err != nil {
		return nil, err
	}
	if out["components"], err = mergeComponents(mapping(hub["components"]), mapping(read["components"])); err != nil {
		return nil, err
	}
	return out, checkOperationIDs(mapping(out["paths"]))
}

// checkHubComponents checks that the hub's document defines what merge
// adds to the read operations.
func checkHubComponents(hub map[string]any) error {
	comps := mapping(hub["components"])
	if _, ok := mapping(comps["securitySchemes"])[securityScheme]; !ok {
		return fmt.Errorf("the hub's document has no security scheme %q", securityScheme)
	}
	for _, name := range hubAnswers {
		if _, ok := mapping(comps["responses"])[name]; !ok {
			return fmt.Errorf("the hub's document has no response %q", name)
		}
	}
	return nil
}

func mergeTags(hub, read []any) ([]any, error) {
	out := slices.Clone(hub)
	seen := map[any]bool{}
	for _, t := range hub {
		seen[mapping(t)["name"]] = true
	}
	for _, t := range read {
		name := mapping(t)["name"]
		if seen[name] {
			return nil, fmt.Errorf("tag %v is in both documents", name)
		}
		seen[name] = true
		out = append(out, t)
	}
	return out, nil
}

// mergePaths adds the read API's operations to the hub's paths, each
// secured by the hub's bearer token.
func mergePaths(hub, read map[string]any) (map[string]any, error) {
	out := maps.Clone(hub)
	if out == nil {
		out = map[string]any{}
	}
	for _, p := range slices.Sorted(maps.Keys(read)) {
		item := mapping(read[p])
		mine, shared := out[p]
		merged := maps.Clone(mapping(mine))
		if merged == nil {
			merged = map[string]any{}
		}
		for _, k := range slices.Sorted(maps.Keys(item)) {
			if !slices.Contains(methods, k) {
				if shared {
					return nil, fmt.Errorf("path %s: the read API's path item has %q, which would apply to the hub's operations too", p, k)
				}
				merged[k] = item[k]
				continue
			}
			if _, ok := merged[k]; ok {
				return nil, fmt.Errorf("path %s: both documents have its %s operation", p, k)
			}
			op, err := secured(mapping(item[k]))
			if err != nil {
				return nil, fmt.Errorf("path %s %s: %w", p, k, err)
			}
			merged[k] = op
		}
		out[p] = merged
	}
	return out, nil
}

// secured returns a read operation as the hub serves it: behind the
// bearer token, with the hub's own answers beside the read API's.
func secured(op map[string]any) (map[string]any, error) {
	if _, ok := op["security"]; ok {
		return nil, errors.New("it has a security requirement of its own; the merge would replace it")
	}
	out := maps.Clone(op)
	out["security"] = []any{map[string]any{securityScheme: []any{}}}
	responses := maps.Clone(mapping(op["responses"]))
	for _, status := range slices.Sorted(maps.Keys(hubAnswers)) {
		if _, ok := responses[status]; ok {
			return nil, fmt.Errorf("it documents %s itself, which the hub answers before the read API sees the call", status)
		}
		responses[status] = map[string]any{"$ref": "#/components/responses/" + hubAnswers[status]}
	}
	out["responses"] = responses
	return out, nil
}

// mergeComponents adds the read API's components under their own names.
func mergeComponents(hub, read map[string]any) (map[string]any, error) {
	out := maps.Clone(hub)
	if out == nil {
		out = map[string]any{}
	}
	for _, kind := range slices.Sorted(maps.Keys(read)) {
		merged := maps.Clone(mapping(out[kind]))
		if merged == nil {
			merged = map[string]any{}
		}
		for name, v := range mapping(read[kind]) {
			if _, ok := merged[name]; ok {
				return nil, fmt.Errorf("components.%s.%s is in both documents", kind, name)
			}
			merged[name] = v
		}
		out[kind] = merged
	}
	return out, nil
}

func checkOperationIDs(paths map[string]any) error {
	seen := map[any]string{}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		for _, m := range methods {
			op, ok := mapping(paths[p])[m]
			if !ok {
				continue
			}
			id := mapping(op)["operationId"]
			if id == nil {
				continue
			}
			if where, dup := seen[id]; dup {
				return fmt.Errorf("operationId %v is both %s and %s %s", id, where, m, p)
			}
			seen[id] = m + " " + p
		}
	}
	return nil
}

func mapping(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}
