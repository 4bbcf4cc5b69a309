package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCommittedDocument holds hub/openapi.json to what the generator
// writes from the two YAML documents: run go generate ./hub after
// changing either.
func TestCommittedDocument(t *testing.T) {
	want, err := generate("../../openapi.yaml", "../../../projector/read/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("hub/openapi.json is stale: run go generate ./hub\n%s", cmp.Diff(string(want), string(got)))
	}
}

// hubDoc and readDoc are small documents shaped as the real ones are.
func hubDoc() map[string]any {
	return map[string]any{
		"openapi":  "3.1.0",
		"info":     map[string]any{"title": "hub"},
		"security": []any{map[string]any{"bearer": []any{}}},
		"tags":     []any{map[string]any{"name": "clusters"}},
		"paths": map[string]any{
			"/api/v1/clusters/{name}": map[string]any{
				"put": map[string]any{"operationId": "registerCluster", "responses": map[string]any{}},
			},
		},
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"responses": map[string]any{
				"Unauthenticated": map[string]any{}, "Denied": map[string]any{}, "Unavailable": map[string]any{}, "TooManyUnauthenticated": map[string]any{},
			},
			"schemas": map[string]any{"HubError": map[string]any{}},
		},
	}
}

func readDoc() map[string]any {
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "read"},
		"tags":    []any{map[string]any{"name": "fleet"}},
		"paths": map[string]any{
			"/api/v1/clusters/{name}": map[string]any{
				"get": map[string]any{"operationId": "getCluster", "responses": map[string]any{
					"200": map[string]any{}, "404": map[string]any{"$ref": "#/components/responses/NotFound"},
				}},
			},
			"/api/v1/audit": map[string]any{
				"get": map[string]any{"operationId": "listAudit", "responses": map[string]any{"200": map[string]any{}}},
			},
		},
		"components": map[string]any{
			"responses": map[string]any{"NotFound": map[string]any{}},
			"schemas":   map[string]any{"Error": map[string]any{}},
		},
	}
}

func TestMerge(t *testing.T) {
	hub, read := hubDoc(), readDoc()
	doc, err := merge(hub, read)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(hub, hubDoc()) || !cmp.Equal(read, readDoc()) {
		t.Error("merge changed its arguments")
	}
	if got := doc["info"].(map[string]any)["title"]; got != "hub" {
		t.Errorf("info.title %v, want the hub's", got)
	}
	item := doc["paths"].(map[string]any)["/api/v1/clusters/{name}"].(map[string]any)
	if _, ok := item["put"]; !ok {
		t.Error("the hub's operation on a shared path is gone")
	}
	want := map[string]any{
		"operationId": "getCluster",
		"security":    []any{map[string]any{"bearer": []any{}}},
		"responses": map[string]any{
			"200": map[string]any{},
			"401": map[string]any{"$ref": "#/components/responses/Unauthenticated"},
			"403": map[string]any{"$ref": "#/components/responses/Denied"},
			"404": map[string]any{"$ref": "#/components/responses/NotFound"},
			"429": map[string]any{"$ref": "#/components/responses/TooManyUnauthenticated"},
			"503": map[string]any{"$ref": "#/components/responses/Unavailable"},
		},
	}
	if diff := cmp.Diff(want, item["get"]); diff != "" {
		t.Errorf("read operation (-want +got):\n%s", diff)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if _, ok := schemas["Error"]; !ok {
		t.Error("the read API's schema Error is gone")
	}
	if _, ok := schemas["HubError"]; !ok {
		t.Error("the hub's schema HubError is gone")
	}
	if n := len(doc["tags"].([]any)); n != 2 {
		t.Errorf("%d tags, want both documents' 2", n)
	}
}

// TestMergeRefuses checks that every name both documents use is an error,
// as is what the merge cannot combine.
func TestMergeRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(hub, read map[string]any)
		want   string
	}{
		{"schema in both", func(_, read map[string]any) {
			read["components"].(map[string]any)["schemas"].(map[string]any)["HubError"] = map[string]any{}
		}, "components.schemas.HubError is in both documents"},
		{"response in both", func(hub, _ map[string]any) {
			hub["components"].(map[string]any)["responses"].(map[string]any)["NotFound"] = map[string]any{}
		}, "components.responses.NotFound is in both documents"},
		{"operation in both", func(hub, _ map[string]any) {
			hub["paths"].(map[string]any)["/api/v1/clusters/{name}"].(map[string]any)["get"] = map[string]any{}
		}, "both documents have its get operation"},
		{"operationId in both", func(_, read map[string]any) {
			read["paths"].(map[string]any)["/api/v1/audit"].(map[string]any)["get"].(map[string]any)["operationId"] = "registerCluster"
		}, "operationId registerCluster is both"},
		{"tag in both", func(_, read map[string]any) {
			read["tags"] = []any{map[string]any{"name": "clusters"}}
		}, "tag clusters is in both documents"},
		{"read operation secured", func(_, read map[string]any) {
			read["paths"].(map[string]any)["/api/v1/audit"].(map[string]any)["get"].(map[string]any)["security"] = []any{}
		}, "security requirement of its own"},
		{"read operation answers 401", func(_, read map[string]any) {
			read["paths"].(map[string]any)["/api/v1/audit"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["401"] = map[string]any{}
		}, "documents 401 itself"},
		{"path-level parameters on a shared path", func(_, read map[string]any) {
			read["paths"].(map[string]any)["/api/v1/clusters/{name}"].(map[string]any)["parameters"] = []any{}
		}, `has "parameters"`},
		{"read servers", func(_, read map[string]any) { read["servers"] = []any{} }, `has "servers"`},
		{"another version", func(_, read map[string]any) { read["openapi"] = "3.0.3" }, "openapi: the hub's document has 3.1.0"},
		{"no bearer scheme", func(hub, _ map[string]any) {
			delete(hub["components"].(map[string]any)["securitySchemes"].(map[string]any), "bearer")
		}, `no security scheme "bearer"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub, read := hubDoc(), readDoc()
			tc.change(hub, read)
			_, err := merge(hub, read)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("merge = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
