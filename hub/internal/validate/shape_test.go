package validate

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
)

// nestedValues is an Application whose Helm valuesObject nests levels
// objects deep ({"a":{"a":…}}), as JSON.
func nestedValues(levels int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"deep"},"spec":{"project":"default",` +
		`"source":{"repoURL":"https://git.example/x.git","helm":{"valuesObject":`)
	for range levels {
		b.WriteString(`{"a":`)
	}
	b.WriteString(`1`)
	b.WriteString(strings.Repeat("}", levels))
	b.WriteString(`}},"destination":{"name":"in-cluster","namespace":"x"}}}`)
	return b.Bytes()
}

// nestedYAML is the same Application as YAML, the values nested by
// indentation.
func nestedYAML(levels int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: deep\nspec:\n  project: default\n" +
		"  destination: {name: in-cluster, namespace: x}\n  source:\n    repoURL: https://git.example/x.git\n    helm:\n      valuesObject:\n")
	for i := range levels {
		b.WriteString(strings.Repeat(" ", 8+i) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", 8+levels) + "b: 1\n")
	return b.Bytes()
}

// TestDepth checks the nesting limit: the manifest's top object is level
// 1, so spec.source.helm.valuesObject is level 5 and MaxDepth-4 levels
// of objects there reach the limit.
func TestDepth(t *testing.T) {
	const inValues = api.MaxDepth - 4
	tests := []struct {
		name     string
		manifest []byte
		field    string // "" when accepted
	}{
		{"JSON at the limit", nestedValues(inValues), ""},
		{"JSON one past the limit", nestedValues(inValues + 1), "spec.source.helm.valuesObject" + strings.Repeat(".a", inValues)},
		{"JSON 9,995 levels", nestedValues(9995), "spec.source.helm.valuesObject" + strings.Repeat(".a", inValues)},
		{"YAML at the limit", nestedYAML(inValues - 1), ""},
		{"YAML one past the limit", nestedYAML(inValues), "spec.source.helm.valuesObject" + strings.Repeat(".a", inValues)},
		{"YAML past the cheap bound", nestedYAML(2000), "(manifest)"},
		{"an array of arrays", []byte(strings.Repeat("[", 5000)), "(manifest)" + strings.Repeat("[0]", 99)},
		{"YAML flow", []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec: " + strings.Repeat("[", 500)), "(manifest)"},
		{"YAML sequences", []byte("spec:\n" + strings.Repeat("- ", 500) + "x\n"), "(manifest)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Application(tc.manifest, "argocd")
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok || len(ve.Fields) != 1 || !strings.Contains(ve.Fields[0].Reason, "deep") {
				t.Fatalf("error %v, want one field nested too deep", err)
			}
			if want := truncatePath(tc.field); ve.Fields[0].Field != want {
				t.Errorf("field %q, want %q", ve.Fields[0].Field, want)
			}
		})
	}
}

// truncatePath shortens a path as errors do.
func truncatePath(p string) string {
	if strings.HasPrefix(p, "(manifest)[") {
		p = strings.TrimPrefix(p, "(manifest)")
	}
	if len(p) > maxPathBytes {
		p = p[:maxPathBytes/2] + "…" + p[len(p)-maxPathBytes/2:]
	}
	return p
}

// TestDepthIsCheap checks that 2 MiB of nesting, the most a request body
// holds, is refused in time and memory linear in it, before anything
// parses it recursively.
func TestDepthIsCheap(t *testing.T) {
	for name, m := range map[string][]byte{
		"brackets":         bytes.Repeat([]byte("["), api.MaxBodyBytes),
		"objects":          bytes.Repeat([]byte(`{"a":`), api.MaxBodyBytes/5),
		"YAML flow":        append([]byte("spec: "), bytes.Repeat([]byte("["), api.MaxBodyBytes)...),
		"YAML indentation": deepYAML(api.MaxBodyBytes),
		"YAML sequences":   append([]byte("spec:\n"), bytes.Repeat([]byte("- "), api.MaxBodyBytes/2)...),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			allocs := testing.AllocsPerRun(1, func() {
				if _, err := Application(m, "argocd"); err == nil || !strings.Contains(err.Error(), "deep") {
					t.Errorf("error %v, want nested too deep", err)
				}
			})
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("refused in %v", d)
			}
			if allocs > 10_000 {
				t.Errorf("%v allocations to refuse it", allocs)
			}
		})
	}
}

// deepYAML is about n bytes of YAML whose every line is indented one
// more than the one before.
func deepYAML(n int) []byte {
	var b bytes.Buffer
	b.WriteString("spec:\n")
	for i := 1; b.Len() < n; i++ {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.Bytes()
}

func TestDuplicateKeys(t *testing.T) {
	tests := []struct {
		name, manifest, field string
	}{
		{"metadata.name twice in JSON", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","name":"b"},
			"spec":{"project":"default","source":{"repoURL":"https://git.example/x.git"},"destination":{"name":"in-cluster"}}}`, "metadata.name"},
		{"a label twice in JSON", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","labels":{"x":"1","x":"2"}},
			"spec":{"project":"default","source":{"repoURL":"https://git.example/x.git"},"destination":{"name":"in-cluster"}}}`, "metadata.labels.x"},
		{"in an array in JSON", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},
			"spec":{"project":"default","sources":[{"repoURL":"https://git.example/x.git"},{"repoURL":"a","repoURL":"b"}],"destination":{"name":"in-cluster"}}}`,
			"spec.sources[1].repoURL"},
		{"spec twice in JSON", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{},"spec":{}}`, "spec"},
		{"metadata.name twice in YAML", strings.Replace(goodApp, "  name: guestbook\n", "  name: guestbook\n  name: other\n", 1), "metadata.name"},
		{"a key twice in YAML flow", strings.Replace(goodApp, "{team: web}", "{team: web, team: db}", 1), "metadata.labels.team"},
		{"a key twice in a YAML sequence", strings.Replace(goodApp, "valueFiles: [values.yaml]", "parameters: [{name: a, name: b}]", 1), "spec.source.helm.parameters[0].name"},
		{"true and yes, the same key in YAML 1.1", strings.Replace(goodApp, "{team: web}", "{true: a, yes: b}", 1), "metadata.labels.true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Application([]byte(tc.manifest), "argocd")
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok || len(ve.Fields) != 1 {
				t.Fatalf("error %v, want one field", err)
			}
			if f := ve.Fields[0]; f.Field != tc.field || !strings.Contains(f.Reason, "twice") {
				t.Errorf("field %+v, want %s given twice", f, tc.field)
			}
		})
	}
}

// TestYAMLDepthBound checks the cheap bound on YAML nesting against
// documents whose depth is known: never under it, and not far over.
func TestYAMLDepthBound(t *testing.T) {
	tests := []struct {
		doc   string
		depth int
	}{
		{"a: 1\n", 1},
		{"a:\n  b:\n    c: 1\n  d: 2\n", 3},
		{"a:\n- x\n- y: 1\n  z: 2\n", 3},
		{"- - - x\n", 3},
		{"a: [1, {b: [2]}]\n", 4},
		{"a: |\n  b:\n    c:\n      d: [[[\n", 1},
		{"a: >-\n    deep\n      deeper\n        deepest\nb: 2\n", 1},
		{"a: 'it''s [ # not'\nb: \"[\\\"{\"\n", 1},
		{"a: x # [[[[\n", 1},
		{"a: \"multi\n    line [[[\"\n", 1},
	}
	for _, tc := range tests {
		bound, _ := yamlDepthBound([]byte(tc.doc), 100)
		if bound < tc.depth || bound > tc.depth+1 {
			t.Errorf("bound %d of %q, want %d or %d", bound, tc.doc, tc.depth, tc.depth+1)
		}
	}
}

// BenchmarkDepth measures the refusal of a 2 MiB body nested as deep as
// it goes, JSON and YAML; BenchmarkApplication the validation of an
// ordinary manifest.
func BenchmarkDepth(b *testing.B) {
	for name, m := range map[string][]byte{
		"json-brackets":    bytes.Repeat([]byte("["), api.MaxBodyBytes),
		"yaml-flow":        append([]byte("spec: "), bytes.Repeat([]byte("["), api.MaxBodyBytes)...),
		"yaml-indentation": deepYAML(api.MaxBodyBytes),
		"json-at-limit":    nestedValues(api.MaxDepth - 4),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(m)))
			for b.Loop() {
				if _, err := Application(m, "argocd"); (err == nil) != (name == "json-at-limit") {
					b.Fatal(err)
				}
			}
		})
	}
}

// wide is about n bytes of Application: its labels (label true) or its
// spec.sources (false) as many as fit, each of them wrong.
func wide(n int, labels bool) []byte {
	var b bytes.Buffer
	if labels {
		b.WriteString(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","labels":{`)
		for i := 0; b.Len() < n-200; i++ {
			fmt.Fprintf(&b, `"-%d":"-",`, i)
		}
		b.WriteString(`"z":"z"}},"spec":{"project":"p","destination":{"name":"n"},"source":{"repoURL":"x"}}}`)
		return b.Bytes()
	}
	b.WriteString(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{"project":"p","destination":{"name":"n"},"sources":[`)
	for b.Len() < n-10 {
		b.WriteString(`{},`)
	}
	b.WriteString(`{}]}}`)
	return b.Bytes()
}

// TestErrorIsBounded checks that a manifest wrong in tens of thousands of
// places gets an answer of a few KiB, not fifty times its own size.
func TestErrorIsBounded(t *testing.T) {
	for name, m := range map[string][]byte{
		// Within api.MaxValues: about 9,000 labels, 34,000 sources.
		"labels":  wide(100<<10, true),
		"sources": wide(100<<10, false),
		"a long unknown key": []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{"` +
			strings.Repeat("k", api.MaxBodyBytes/8) + `":1}}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Application(m, "argocd")
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok {
				t.Fatalf("error %.300v, want an *Error", err)
			}
			if n := len(err.Error()); n > 16<<10 || len(ve.Fields) > maxFields {
				t.Errorf("%d fields, %d bytes: %.300s", len(ve.Fields), n, err)
			}
			if name != "a long unknown key" && !ve.More {
				t.Errorf("%d fields listed, and none said to be left out", len(ve.Fields))
			}
		})
	}
}

// TestTooManyValues checks that a manifest of more than api.MaxValues keys
// and values is refused, in JSON by the walk that counts them and in YAML
// by the bound that counts lines and commas before any parsing, naming
// the limit.
func TestTooManyValues(t *testing.T) {
	var y bytes.Buffer
	y.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: a\n  labels:\n")
	for i := range api.MaxValues + 10 {
		fmt.Fprintf(&y, "    k%d: v\n", i)
	}
	var flow bytes.Buffer
	flow.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec: {project: p, x: [")
	flow.WriteString(strings.Repeat("1,", 2*api.MaxValues+1))
	flow.WriteString("1]}\n")
	for name, m := range map[string][]byte{
		"json":      wideValues(api.MaxValues),
		"yaml":      y.Bytes(),
		"yaml flow": flow.Bytes(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Application(m, "argocd")
			if err == nil || !strings.Contains(err.Error(), strconv.Itoa(api.MaxValues)) {
				t.Fatalf("%d bytes: %.300v, want a refusal naming the limit of %d values", len(m), err, api.MaxValues)
			}
		})
	}
	if _, err := Application(wideValues(api.MaxValues/2-100), "argocd"); err != nil {
		t.Errorf("a manifest within the limit: %.300v", err)
	}
}

// wideValues is an Application whose Helm valuesObject holds n keys, each
// with a number: 2n keys and values.
func wideValues(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"w"},"spec":{"project":"default",` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"x"},"source":{"repoURL":"https://example.com/r.git","helm":{"valuesObject":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString(`}}}}}`)
	return b.Bytes()
}

// BenchmarkWide measures the refusal of a 2 MiB manifest wrong in every
// one of its hundreds of thousands of labels or sources, and the
// acceptance of the widest manifest within api.MaxValues.
func BenchmarkWide(b *testing.B) {
	for name, m := range map[string][]byte{"labels": wide(api.MaxBodyBytes, true), "sources": wide(api.MaxBodyBytes, false),
		"accepted": wideValues(api.MaxValues/2 - 100)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(m)))
			for b.Loop() {
				if _, err := Application(m, "argocd"); (err == nil) != (name == "accepted") {
					b.Fatal(err)
				}
			}
		})
	}
}
