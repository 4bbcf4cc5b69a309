//go:build integration

package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// app is an Application manifest with meta as its metadata's fields
// besides the name and spec as its source.
func app(meta, source string) json.RawMessage {
	return json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web"` + meta + `},
		"spec":{"project":"default","source":` + source + `,"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`)
}

// TestHostileManifests: a manifest nested too deep, with a key given
// twice, labels no apiserver takes, annotations past their limit,
// credentials in a repository URL, or making an event past the log's
// limit, is answered 4xx naming what to change; nothing is written to the
// config or placements topics, and each refusal is audited as failed with
// its status code.
func TestHostileManifests(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	r.register(root, "edge-1", map[string]string{"env": "edge"})
	const source = `{"repoURL":"https://git.example.com/web.git","path":"app"}`
	deep := `{"repoURL":"https://git.example.com/web.git","helm":{"valuesObject":` + strings.Repeat(`{"a":`, 9995) + `1` + strings.Repeat(`}`, 9995) + `}}`
	big := `{"repoURL":"https://git.example.com/web.git","helm":{"valuesObject":{"big":"` + strings.Repeat("x", 600<<10) + `"}}}`
	tests := []struct {
		name      string
		kind      string // applications, appprojects or placements
		manifest  json.RawMessage
		status    int
		field, in string // the field named, and a word the error says
	}{
		{"nested 9,995 levels", api.KindApplications, app("", deep), http.StatusBadRequest,
			"manifest.spec.source.helm.valuesObject" + strings.Repeat(".a", 46) + "…", "deeper than 100"},
		{"metadata.name twice", api.KindApplications, app(`,"name":"other"`, source), http.StatusBadRequest, "manifest.metadata.name", "twice"},
		{"a label ../x", api.KindApplications, app(`,"labels":{"../x":"a"}`, source), http.StatusBadRequest, "manifest.metadata.labels[../x]", "label"},
		{"a 10,000-character label", api.KindApplications, app(`,"labels":{"team":"`+strings.Repeat("v", 10_000)+`"}`, source), http.StatusBadRequest,
			"manifest.metadata.labels[team]", "63"},
		{"a 1.9 MiB annotation", api.KindApplications, app(`,"annotations":{"note":"`+strings.Repeat("v", 1900<<10)+`"}`, source), http.StatusBadRequest,
			"manifest.metadata.annotations", "limit"},
		{"a password in repoURL", api.KindApplications, app("", `{"repoURL":"https://bot:hunter2@git.example.com/web.git"}`), http.StatusBadRequest,
			"manifest.spec.source.repoURL", "argosy repo add"},
		{"a password in sourceRepos", api.KindAppProjects, json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p"},
			"spec":{"sourceRepos":["https://bot:hunter2@git.example.com/web.git"]}}`), http.StatusBadRequest, "manifest.spec.sourceRepos[0]", "argosy repo add"},
		{"an event past the limit", api.KindApplications, app("", big), http.StatusRequestEntityTooLarge, "", "512 KiB"},
		{"a placement past the limit", api.KindPlacements, app("", big), http.StatusRequestEntityTooLarge, "", "512 KiB"},
		{"a placement nested too deep", api.KindPlacements, app("", deep), http.StatusBadRequest,
			"manifest.spec.source.helm.valuesObject" + strings.Repeat(".a", 46) + "…", "deeper than 100"},
	}
	refused := map[string]int{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.kind == api.KindPlacements {
				_, err = root.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=edge", Manifest: tc.manifest}, api.WriteOptions{})
			} else {
				_, err = root.Apply(t.Context(), tc.kind, api.ApplyRequest{Clusters: []string{"edge-1"}, Manifest: tc.manifest}, api.WriteOptions{})
			}
			var re *api.ResponseError
			if api.StatusOf(err) != tc.status || !asResponse(err, &re) {
				t.Fatalf("error %.300v, want %d", err, tc.status)
			}
			refused[fmt.Sprintf("%s %d", tc.kind, tc.status)]++
			if !contains(re.Body.Error, tc.in) {
				t.Errorf("error %.500q does not say %q", re.Body.Error, tc.in)
			}
			if contains(re.Body.Error, "hunter2") || contains(re.Body.Error, strings.Repeat("v", 100)) {
				t.Errorf("error %.500q says the input back", re.Body.Error)
			}
			if tc.field == "" {
				return
			}
			for _, f := range re.Body.Fields {
				if strings.HasPrefix(f.Field, strings.TrimSuffix(tc.field, "…")) {
					return
				}
			}
			t.Errorf("fields %.500v, want %s", re.Body.Fields, tc.field)
		})
	}
	// As deep as the limit goes through the API: the valuesObject is the
	// fifth level of the manifest, so 96 objects from it reach the 100th.
	// A level more is refused.
	for n, want := range map[int]int{96: http.StatusOK, 97: http.StatusBadRequest} {
		atLimit := `{"repoURL":"https://git.example.com/web.git","helm":{"valuesObject":` + strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n) + `}}`
		_, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"edge-1"}, Manifest: app("", atLimit)},
			api.WriteOptions{DryRun: true})
		if got := api.StatusOf(err); (err == nil && want != http.StatusOK) || (err != nil && got != want) {
			t.Errorf("a manifest %d levels deep: %.300v, want %d", n+4, err, want)
		}
		if want != http.StatusOK {
			refused[fmt.Sprintf("%s %d", api.KindApplications, want)]++
		}
	}
	for _, topic := range []events.Topic{events.TopicConfig, events.TopicPlacements} {
		for _, d := range r.decoded(r.records(topic)) {
			if d.Event.Type() != events.TypeClusterRegistered {
				t.Errorf("%s written to the %s topic", d.Event.Type(), topic)
			}
		}
	}
	audited := map[string]int{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		if a.Outcome == "failed" && len(a.EventIDs) == 0 {
			audited[fmt.Sprintf("%s %d", strings.TrimPrefix(a.Path, "/api/v1/"), a.StatusCode)]++
		}
	}
	for k, n := range refused {
		if audited[k] != n {
			t.Errorf("%d refusals of %s audited as failed, want %d (audited: %v)", audited[k], k, n, audited)
		}
	}
}
