package events_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/internal/golden"
	"github.com/argosyproj/argosy/schemas"
)

const goldenDir = "testdata/golden"

// goldenRegistry trusts the public keys committed beside the samples.
func goldenRegistry(t testing.TB) *events.Registry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	var kf golden.KeyFile
	if err := json.Unmarshal(b, &kf); err != nil {
		t.Fatal(err)
	}
	var keys []events.Key
	for _, k := range kf.Keys {
		keys = append(keys, events.Key{ID: k.ID, Owner: k.Owner, Role: k.Role, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", Public: k.PublicKey})
	}
	return events.NewRegistry(keys...)
}

func goldenDecoder(t testing.TB, opts ...events.Option) *events.Decoder {
	t.Helper()
	d, err := events.NewDecoder(events.NewVerifier(goldenRegistry(t)), append([]events.Option{events.AcceptCreateTime()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// goldenFiles returns every sample path, binary and structured, of both
// signature forms.
func goldenFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"io.argosy.*.json", "structured/io.argosy.*.json",
		golden.CompactDir + "/io.argosy.*.json", golden.CompactDir + "/structured/io.argosy.*.json"} {
		m, err := filepath.Glob(filepath.Join(goldenDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// TestGoldenSamplesDecode decodes every committed sample with today's code:
// wire samples must decode forever.
func TestGoldenSamplesDecode(t *testing.T) {
	dec := goldenDecoder(t, events.WithTarget(golden.ClusterName))
	seen := map[string]bool{}
	for _, path := range goldenFiles(t) {
		t.Run(strings.TrimPrefix(path, goldenDir+"/"), func(t *testing.T) {
			s, d := decodeGolden(t, dec, path)
			typ := strings.TrimSuffix(filepath.Base(path), ".json")
			if d.Spec.Type != typ {
				t.Errorf("type %q, file says %q", d.Spec.Type, typ)
			}
			checkGoldenForm(t, path, s, d.Spec)
			seen[strings.TrimPrefix(filepath.Dir(path), goldenDir)+" "+typ] = true
			if d.Topic != s.Topic || d.Offset != s.Offset || !d.LogTime.Equal(s.Timestamp) {
				t.Errorf("position %s@%d %v, want %s@%d %v", d.Topic, d.Offset, d.LogTime, s.Topic, s.Offset, s.Timestamp)
			}
			if got, want := d.Event.Extensions()[events.ExtPartitionKey], s.Key; got != want {
				t.Errorf("partitionkey %v, want key %q", got, want)
			}
			if d.TraceParent == "" {
				t.Error("trace context lost")
			}
			// The typed payload encodes back to the same data.
			again, err := json.Marshal(d.Data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(normJSON(t, d.Event.Data()), normJSON(t, again)); diff != "" {
				t.Errorf("payload round trip (-wire +typed):\n%s", diff)
			}
		})
	}
	for _, sp := range events.Catalogue() {
		for _, dir := range []string{"", "/" + golden.CompactDir} {
			if !seen[dir+" "+sp.Type] {
				t.Errorf("no golden sample for %s in %s: run go run ./events/internal/golden/gen", sp.Type, goldenDir+dir)
			}
		}
	}
}

// checkGoldenForm checks that a binary sample is in the signature form of
// its directory: the DSSE form beside a dataschema on every event, or the
// compact form without one on a type that names its schema.
func checkGoldenForm(t *testing.T, path string, s golden.Sample, sp events.Spec) {
	t.Helper()
	if strings.Contains(path, "/structured/") {
		return
	}
	hs := map[string]bool{}
	for _, h := range s.Headers {
		hs[h.Key] = true
	}
	compact := strings.HasPrefix(path, filepath.Join(goldenDir, golden.CompactDir)+"/")
	if hs["ce_sig"] != compact || hs["ce_dssematerial"] == compact {
		t.Errorf("ce_sig %v, ce_dssematerial %v in a sample of the %s form", hs["ce_sig"], hs["ce_dssematerial"],
			map[bool]string{true: "compact", false: "DSSE"}[compact])
	}
	if want := !compact || !sp.TypeNamesSchema(); hs["ce_dataschema"] != want {
		t.Errorf("ce_dataschema %v, want %v", hs["ce_dataschema"], want)
	}
}

func normJSON(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// TestGoldenSamplesMatchSchemas validates every sample's data against its
// published JSON Schema, independently of Decode.
func TestGoldenSamplesMatchSchemas(t *testing.T) {
	for _, path := range goldenFiles(t) {
		s, err := golden.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		e, err := events.ParseRecord(context.Background(), s.Record())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := events.ValidateData(e.Type(), e.Data()); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// TestAsyncAPICoversCatalogue checks that the AsyncAPI document has a
// message named after every event type of the catalogue, on the channel of
// the type's topic, and lists every dead-letter reason code.
func TestAsyncAPICoversCatalogue(t *testing.T) {
	var doc struct {
		Channels map[string]struct {
			Address  string                       `json:"address"`
			Messages map[string]map[string]string `json:"messages"`
		} `json:"channels"`
		Components struct {
			Messages map[string]struct {
				Name string `json:"name"`
			} `json:"messages"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(schemas.AsyncAPI, &doc); err != nil {
		t.Fatal(err)
	}
	channelsOf := map[string][]string{} // message name -> topics
	for _, ch := range doc.Channels {
		for _, ref := range ch.Messages {
			id := strings.TrimPrefix(ref["$ref"], "#/components/messages/")
			name := doc.Components.Messages[id].Name
			channelsOf[name] = append(channelsOf[name], ch.Address)
		}
	}
	topics := events.DefaultTopics("")
	for _, sp := range events.Catalogue() {
		got, ok := channelsOf[sp.Type]
		if !ok {
			t.Errorf("asyncapi.yaml has no message named %s on any channel", sp.Type)
			continue
		}
		for _, ch := range got {
			// Config events describing an object are copied to the
			// desired-state topic too.
			desiredCopy := ch == topics[events.TopicDesired] && sp.Topic == events.TopicConfig
			if ch != topics[sp.Topic] && !desiredCopy {
				t.Errorf("%s is on channel %s, catalogue says %s", sp.Type, ch, topics[sp.Topic])
			}
		}
		if !slices.Contains(got, topics[sp.Topic]) {
			t.Errorf("%s is not on its catalogue topic %s", sp.Type, topics[sp.Topic])
		}
	}
	for _, reason := range append(events.Reasons(), "handler") {
		if !strings.Contains(string(schemas.AsyncAPI), reason) {
			t.Errorf("asyncapi.yaml does not document dead-letter reason %q", reason)
		}
	}
}

// TestDesignDocCoversCatalogue keeps docs/design.md's catalogue table true.
func TestDesignDocCoversCatalogue(t *testing.T) {
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	topics := events.DefaultTopics("")
	for _, sp := range events.Catalogue() {
		row := "| `" + sp.Type + "` | " + string(sp.Topic) + " | " + sp.Signer + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/design.md has no catalogue row starting %q (topic %s)", row, topics[sp.Topic])
		}
	}
}

// TestGoldenDesiredSamplesDecode decodes the desired-state samples with
// today's code. A copy keys its record by the object and, since it is
// signed again with that key as its partitionkey, carries the same value in
// ce_partitionkey. The legacy samples are copies as the hub wrote them
// before: the config record's headers unchanged, so the signed
// ce_partitionkey names the cluster while the key names the object. They
// must decode forever, taking partitionkey from the header.
func TestGoldenDesiredSamplesDecode(t *testing.T) {
	dec := goldenDecoder(t, events.WithTarget(golden.ClusterName), events.WithTopics(events.DefaultTopics("")))
	paths, err := filepath.Glob(filepath.Join(goldenDir, "desired", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no desired-state samples: %v", err)
	}
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			s, d := decodeGolden(t, dec, path)
			if typ := strings.TrimSuffix(strings.TrimPrefix(name, "legacy-"), ".json"); d.Spec.Type != typ {
				t.Errorf("type %q, file says %q", d.Spec.Type, typ)
			}
			if want := events.DesiredKey(d.Subject); s.Key != want {
				t.Errorf("key %q, want %q", s.Key, want)
			}
			want := s.Key
			if strings.HasPrefix(name, "legacy-") {
				want = golden.ClusterName
			}
			if got := d.Event.Extensions()[events.ExtPartitionKey]; got != want {
				t.Errorf("signed partitionkey %v, want %q", got, want)
			}
			if _, err := events.ConfigOffset(s.Record()); err != nil {
				t.Error(err)
			}
		})
	}
}

// decodeGolden reads the golden sample at path and decodes its record.
func decodeGolden(t *testing.T, dec *events.Decoder, path string) (golden.Sample, *events.Decoded) {
	t.Helper()
	s, err := golden.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dec.Decode(context.Background(), s.Record())
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return s, d
}
