package events

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/schemas"
)

func validStatus() *schemas.ApplicationStatusChanged {
	return &schemas.ApplicationStatusChanged{
		Resource: schemas.Resource{Cluster: "prod-eu-1", Namespace: "argocd", Name: "guestbook.web", Generation: 3},
		Seq:      7, Full: true,
		Sync:       &schemas.SyncStatus{Status: "Synced", Revision: "4f1c2d9"},
		Health:     &schemas.HealthStatus{Status: "Healthy", Message: "<ok> & \"fine\""},
		Conditions: []schemas.Condition{{Type: "SyncError", Message: "é"}},
		Resources:  &schemas.ResourceSummary{Total: 2, ByKind: map[string]int{"Deployment": 1, "Service": 1}, ByHealth: map[string]int{"Healthy": 2}},
	}
}

func validBeat() *schemas.Heartbeat {
	return &schemas.Heartbeat{Cluster: "prod-eu-1", AgentVersion: "v1.2.3", ArgoCDVersion: "v2.14.21", Mode: "managed",
		ConfigOffset: 12, Applications: 3, Seq: 9, ApplicationsBySync: map[string]int{"Synced": 3}, ConfigLag: 1}
}

// batch returns a batch of ds, of their first one's cluster.
func batch(ds ...*schemas.ApplicationStatusChanged) *schemas.ApplicationStatusBatch {
	b := &schemas.ApplicationStatusBatch{Cluster: "prod-eu-1", Deltas: []schemas.ApplicationStatusChanged{}}
	for _, d := range ds {
		b.Deltas = append(b.Deltas, *d)
	}
	return b
}

// TestConformsFast checks the fast path on values the schema accepts and on
// each rule it must not let through, and that the validator agrees with
// every answer of true.
func TestConformsFast(t *testing.T) {
	status := func(f func(*schemas.ApplicationStatusChanged)) any {
		v := validStatus()
		f(v)
		return v
	}
	beat := func(f func(*schemas.Heartbeat)) any {
		v := validBeat()
		f(v)
		return v
	}
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"status", validStatus(), true},
		{"status, minimal", &schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: "c", Name: "a"}}, true},
		{"status, 63-character cluster", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = strings.Repeat("a", 63) }), true},
		{"status, 253-character name", status(func(v *schemas.ApplicationStatusChanged) {
			v.Name = strings.Repeat(strings.Repeat("a", 62)+".", 4) + "a"
		}), true},
		{"batch", batch(validStatus(), validStatus()), true},
		{"batch of the most deltas", batch(slices.Repeat([]*schemas.ApplicationStatusChanged{validStatus()}, schemas.MaxBatchDeltas)...), true},
		{"status with its resources listed", status(func(v *schemas.ApplicationStatusChanged) {
			v.Resources.Items = []schemas.ResourceStatus{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web",
				Status: "Synced", Health: &schemas.HealthStatus{Status: "Healthy"}, SyncWave: -1}, {Version: "v1", Kind: "Service", Name: "web", Hook: true}}
		}), true},
		{"heartbeat", validBeat(), true},
		{"heartbeat, autonomous", beat(func(v *schemas.Heartbeat) { v.Mode = "autonomous" }), true},

		{"cluster upper case", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = "Prod" }), false},
		{"cluster empty", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = "" }), false},
		{"cluster 64 characters", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = strings.Repeat("a", 64) }), false},
		{"cluster ends with a hyphen", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = "prod-" }), false},
		{"cluster starts with a hyphen", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = "-prod" }), false},
		{"cluster with a dot", status(func(v *schemas.ApplicationStatusChanged) { v.Cluster = "prod.eu" }), false},
		{"namespace with an underscore", status(func(v *schemas.ApplicationStatusChanged) { v.Namespace = "argo_cd" }), false},
		{"name empty", status(func(v *schemas.ApplicationStatusChanged) { v.Name = "" }), false},
		{"name with an empty label", status(func(v *schemas.ApplicationStatusChanged) { v.Name = "guestbook..web" }), false},
		{"name ends with a dot", status(func(v *schemas.ApplicationStatusChanged) { v.Name = "guestbook." }), false},
		{"name 254 characters", status(func(v *schemas.ApplicationStatusChanged) {
			v.Name = strings.Repeat(strings.Repeat("a", 62)+".", 4) + "ab"
		}), false},
		{"name not ASCII", status(func(v *schemas.ApplicationStatusChanged) { v.Name = "gästebuch" }), false},
		{"generation negative", status(func(v *schemas.ApplicationStatusChanged) { v.Generation = -1 }), false},
		{"seq negative", status(func(v *schemas.ApplicationStatusChanged) { v.Seq = -1 }), false},
		{"sync status empty", status(func(v *schemas.ApplicationStatusChanged) { v.Sync.Status = "" }), false},
		{"health status empty", status(func(v *schemas.ApplicationStatusChanged) { v.Health.Status = "" }), false},
		{"condition type empty", status(func(v *schemas.ApplicationStatusChanged) { v.Conditions[0].Type = "" }), false},
		{"resources total negative", status(func(v *schemas.ApplicationStatusChanged) { v.Resources.Total = -1 }), false},
		{"resources count negative", status(func(v *schemas.ApplicationStatusChanged) { v.Resources.ByKind["Service"] = -1 }), false},
		{"resource item kind empty", status(func(v *schemas.ApplicationStatusChanged) {
			v.Resources.Items = []schemas.ResourceStatus{{Name: "web"}}
		}), false},
		{"resource item name empty", status(func(v *schemas.ApplicationStatusChanged) {
			v.Resources.Items = []schemas.ResourceStatus{{Kind: "Service"}}
		}), false},
		{"resource item health status empty", status(func(v *schemas.ApplicationStatusChanged) {
			v.Resources.Items = []schemas.ResourceStatus{{Kind: "Service", Name: "web", Health: &schemas.HealthStatus{Message: "?"}}}
		}), false},
		{"resource items past their bound", status(func(v *schemas.ApplicationStatusChanged) {
			v.Resources.Items = slices.Repeat([]schemas.ResourceStatus{{Kind: "Service", Name: "web"}}, schemas.MaxResourceItems+1)
		}), false},
		{"operation, left to the validator", status(func(v *schemas.ApplicationStatusChanged) {
			v.Operation = &schemas.OperationState{Phase: "Running", StartedAt: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)}
		}), false},
		{"batch of none", batch(), false},
		{"batch of too many deltas", batch(slices.Repeat([]*schemas.ApplicationStatusChanged{validStatus()}, schemas.MaxBatchDeltas+1)...), false},
		{"batch cluster empty", func() any { b := batch(validStatus()); b.Cluster = ""; return b }(), false},
		{"batch delta name empty", batch(validStatus(), status(func(v *schemas.ApplicationStatusChanged) { v.Name = "" }).(*schemas.ApplicationStatusChanged)), false},
		{"batch delta with an operation", batch(status(func(v *schemas.ApplicationStatusChanged) {
			v.Operation = &schemas.OperationState{Phase: "Running", StartedAt: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)}
		}).(*schemas.ApplicationStatusChanged)), false},
		{"mode unknown", beat(func(v *schemas.Heartbeat) { v.Mode = "remote" }), false},
		{"agent version empty", beat(func(v *schemas.Heartbeat) { v.AgentVersion = "" }), false},
		{"config offset negative", beat(func(v *schemas.Heartbeat) { v.ConfigOffset = -1 }), false},
		{"config lag negative", beat(func(v *schemas.Heartbeat) { v.ConfigLag = -1 }), false},
		{"applications negative", beat(func(v *schemas.Heartbeat) { v.Applications = -1 }), false},
		{"count by health negative", beat(func(v *schemas.Heartbeat) { v.ApplicationsByHealth = map[string]int{"Healthy": -2} }), false},
		{"other types go to the validator", &schemas.ConfigApplied{Resource: schemas.Resource{Cluster: "c", Name: "a"}, EventID: "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if got := conformsFast(tc.v, data); got != tc.want {
				t.Fatalf("conformsFast = %v, want %v for %s", got, tc.want, data)
			}
			if err := validate(tc.v, data); tc.want && err != nil {
				t.Fatalf("the fast path accepts what the validator refuses: %v", err)
			}
		})
	}
}

// TestConformsFastWantsTheCanonicalEncoding: valid data in any other form
// than json.Marshal's goes to the validator, which still accepts it.
func TestConformsFastWantsTheCanonicalEncoding(t *testing.T) {
	canonical, err := json.Marshal(validBeat())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"indented":       strings.ReplaceAll(string(canonical), ",", ", "),
		"another member": strings.Replace(string(canonical), "{", `{"region":"eu",`, 1),
		"members reordered": strings.TrimSuffix(strings.Replace(string(canonical), `"cluster":"prod-eu-1",`, "", 1), "}") +
			`,"cluster":"prod-eu-1"}`,
		"a duplicate member":        strings.Replace(string(canonical), "{", `{"mode":"remote",`, 1),
		"an escaped letter":         strings.Replace(string(canonical), `"managed"`, `"m\u0061naged"`, 1),
		"a number with an exponent": strings.Replace(string(canonical), `"seq":9`, `"seq":9e0`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			v := &schemas.Heartbeat{}
			if err := json.Unmarshal([]byte(data), v); err != nil {
				return // not decodable: the validator decides, as before
			}
			if conformsFast(v, []byte(data)) {
				t.Fatalf("conformsFast accepts a non-canonical encoding: %s", data)
			}
		})
	}
}

// FuzzConformsFastImpliesSchema checks the one promise the fast path makes:
// whatever it accepts, the JSON Schema validator accepts. Raw data is
// decoded as Decode decodes it; field values are encoded as a spoke does.
func FuzzConformsFastImpliesSchema(f *testing.F) {
	for _, typ := range []string{TypeApplicationStatus, TypeApplicationStatusBatch, TypeHeartbeat} {
		raw, err := os.ReadFile(filepath.Join("testdata", "golden", typ+".json"))
		if err != nil {
			f.Fatal(err)
		}
		var sample struct{ Value string }
		if err := json.Unmarshal(raw, &sample); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(sample.Value), "prod-eu-1", "argocd", "guestbook", "Synced", "managed", int64(1), int64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, cluster, namespace, name, status, mode string, seq, n int64) {
		check := func(v any, data []byte) {
			t.Helper()
			if conformsFast(v, data) {
				if err := validate(v, data); err != nil {
					t.Fatalf("the fast path accepts %s, which the validator refuses: %v", data, err)
				}
			}
		}
		for _, v := range []any{&schemas.ApplicationStatusChanged{}, &schemas.ApplicationStatusBatch{}, &schemas.Heartbeat{}} {
			if json.Unmarshal(data, v) == nil {
				check(v, data)
			}
		}
		for _, v := range []any{
			&schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: cluster, Namespace: namespace, Name: name, Generation: n},
				Seq: seq, Sync: &schemas.SyncStatus{Status: status, Revision: mode}, Health: &schemas.HealthStatus{Status: mode},
				Conditions: []schemas.Condition{{Type: status}}, Resources: &schemas.ResourceSummary{Total: int(n), ByKind: map[string]int{name: int(seq)},
					Items: []schemas.ResourceStatus{{Kind: status, Name: name, Namespace: namespace, Health: &schemas.HealthStatus{Status: mode}, SyncWave: seq}}}},
			&schemas.ApplicationStatusBatch{Cluster: mode, Deltas: []schemas.ApplicationStatusChanged{{Resource: schemas.Resource{
				Cluster: cluster, Namespace: namespace, Name: name, Generation: n}, Seq: seq, Health: &schemas.HealthStatus{Status: status}}}},
			&schemas.Heartbeat{Cluster: cluster, AgentVersion: status, ArgoCDVersion: namespace, Mode: mode, ConfigOffset: n,
				Applications: int(seq), Seq: seq, ApplicationsBySync: map[string]int{status: int(n)}, ConfigLag: n},
		} {
			encoded, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			check(v, encoded)
		}
	})
}

// validate runs the JSON Schema validator on data of v's type.
func validate(v any, data []byte) error {
	typ := TypeApplicationStatus
	switch v.(type) {
	case *schemas.Heartbeat:
		typ = TypeHeartbeat
	case *schemas.ConfigApplied:
		typ = TypeConfigApplied
	case *schemas.ApplicationStatusBatch:
		typ = TypeApplicationStatusBatch
	}
	return ValidateData(typ, data)
}

// TestConformsFastTakesPublishedEvents: the data of events built with New,
// as the spoke publishes them, takes the fast path.
func TestConformsFastTakesPublishedEvents(t *testing.T) {
	for typ, v := range map[string]any{TypeApplicationStatus: validStatus(), TypeApplicationStatusBatch: batch(validStatus()), TypeHeartbeat: validBeat()} {
		e, err := New("//argosy.dev/spoke/prod-eu-1", typ, Subject{Cluster: "prod-eu-1"}.String(), "prod-eu-1", v)
		if err != nil {
			t.Fatal(err)
		}
		sp, _ := Lookup(typ)
		decoded := sp.NewData()
		if err := json.Unmarshal(e.Data(), decoded); err != nil {
			t.Fatal(err)
		}
		if !conformsFast(decoded, e.Data()) {
			t.Errorf("%s: the data New encodes does not take the fast path: %s", typ, e.Data())
		}
	}
}

// TestConformsFastKnowsTheSchemas pins the schemas conformsFast was
// written from. A compatible change can still add a property with rules of
// its own, which the fast path would not check: whoever changes one of
// these schemas must bring conformsFast, TestConformsFast and the fuzz
// target's values up to date, then the digest here.
func TestConformsFastKnowsTheSchemas(t *testing.T) {
	for typ, want := range map[string]string{
		TypeApplicationStatus:      "bff32d86327cb24af8a4e1ea80031d853fc9634ad3da836fa76931d0cffb3eb7",
		TypeApplicationStatusBatch: "9839f661feb356c7135623e8e8f03535c28cf051e921f2b45a0d986c5dae2daa",
		TypeHeartbeat:              "c99bda40ff52c53cc246ba7d7b80837bdafd113e0736dd69d9bcecb5df964f55",
	} {
		raw, err := fs.ReadFile(schemas.Files(), typ+".json")
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(raw)); got != want {
			t.Errorf("the schema of %s changed (sha256 %s): review conformsFast against it", typ, got)
		}
	}
}
