//go:build integration

package deploy_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yannh/kubeconform/pkg/validator"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// badManifests are objects kubeconform must refuse: a misspelt field in a
// built-in kind, an unknown field in a CRD's kind, and a wrong type.
const badManifests = `apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: bad}}
    spec:
      containers:
        - {name: bad, image: bad, imagePullPolicyy: Always}
---
apiVersion: kafka.strimzi.io/v1
kind: KafkaTopic
metadata: {name: bad, labels: {strimzi.io/cluster: argosy}}
spec: {partition: 3, replicas: 3}
---
apiVersion: v1
kind: Service
metadata: {name: bad}
spec:
  ports: [{port: http}]
`

// TestKubeconform validates, with kubeconform in strict mode, every render
// of ci/*-values.yaml and every file of deploy/strimzi against JSON Schemas
// made from this apiserver's OpenAPI (Kubernetes 1.34 and the Strimzi,
// Argo CD and ServiceMonitor CRDs installed on it); and checks that it
// refuses objects with an unknown field or a wrong type.
func TestKubeconform(t *testing.T) {
	e := setup(t)
	inputs := map[string][]byte{}
	for _, f := range valuesFiles(t) {
		out, err := kubetest.Helm(t.Context(), "template", "argosy", chart, "--namespace", "argosy", "-f", f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = out
	}
	files, err := filepath.Glob("strimzi/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("%v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = b
	}
	v := kubeconform(t, e)
	for name, b := range inputs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			n := 0
			for _, r := range v.Validate(name, io.NopCloser(bytes.NewReader(b))) {
				switch r.Status {
				case validator.Valid:
					n++
				case validator.Empty:
				default:
					t.Errorf("%s: %s", describe(r), r.Err)
				}
			}
			if n == 0 {
				t.Error("no object validated")
			}
		})
	}
	t.Run("bad objects", func(t *testing.T) {
		want := map[string]string{
			"Deployment": "/spec/template/spec/containers/0", "KafkaTopic": "/spec", "Service": "/spec/ports/0/port",
		}
		for _, r := range v.Validate("bad.yaml", io.NopCloser(strings.NewReader(badManifests))) {
			kind := r.Resource.Path
			if sig, err := r.Resource.Signature(); err == nil {
				kind = sig.Kind
			}
			if r.Status != validator.Invalid || len(r.ValidationErrors) == 0 || r.ValidationErrors[0].Path != want[kind] {
				t.Errorf("%s: status %d, errors %+v (%v); want invalid at %s", kind, r.Status, r.ValidationErrors, r.Err, want[kind])
			}
			delete(want, kind)
		}
		if len(want) > 0 {
			t.Errorf("not validated: %v", want)
		}
	})
}

// kubeconform returns a strict validator reading the schemas written from
// e's OpenAPI. A CRD's schema reaches the OpenAPI documents shortly after
// the CRD is established, so it waits (at most half a minute) until the
// kinds the tests validate have theirs.
func kubeconform(t *testing.T, e *kubetest.Env) validator.Validator {
	t.Helper()
	want := []string{"deployment-apps-v1.json", "kafka-kafka-v1.json", "kafkanodepool-kafka-v1.json", "kafkatopic-kafka-v1.json",
		"kafkauser-kafka-v1.json", "servicemonitor-monitoring-v1.json", "application-argoproj-v1alpha1.json"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		dir := t.TempDir()
		names, err := e.WriteJSONSchemas(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		missing := missingFiles(names, want)
		if len(missing) == 0 {
			t.Logf("%d schemas from the apiserver's OpenAPI", len(names))
			v, err := validator.New([]string{filepath.Join(dir, "{{ .ResourceKind }}{{ .KindSuffix }}.json")},
				validator.Opts{Strict: true, KubernetesVersion: strings.TrimPrefix(kubetest.KubernetesVersion, "v")})
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no schema for %v among %d", missing, len(names))
		}
		time.Sleep(time.Second)
	}
}

func missingFiles(have, want []string) []string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var out []string
	for _, w := range want {
		if !set[w] {
			out = append(out, w)
		}
	}
	return out
}

// describe names a result's object and lists its validation errors.
func describe(r validator.Result) string {
	s := r.Resource.Path
	if sig, err := r.Resource.Signature(); err == nil {
		s = fmt.Sprintf("%s %s/%s", s, sig.Kind, sig.Name)
	}
	for _, ve := range r.ValidationErrors {
		s += fmt.Sprintf("\n\t%s: %s", ve.Path, ve.Msg)
	}
	return s
}
