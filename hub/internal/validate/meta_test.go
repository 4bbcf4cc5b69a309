package validate

import (
	"fmt"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/argosyproj/argosy/hub/api"
)

// withMeta is goodApp with its labels replaced by labels, and
// annotations added.
func withMeta(labels, annotations string) string {
	m := strings.Replace(goodApp, "  labels: {team: web}\n", "  labels: "+labels+"\n", 1)
	if annotations != "" {
		m = strings.Replace(m, "  name: guestbook\n", "  name: guestbook\n  annotations: "+annotations+"\n", 1)
	}
	return m
}

// TestMetadataByKubernetesRules checks names, labels and annotations
// against what an apiserver accepts, each refusal naming its field and
// none saying a long value back.
func TestMetadataByKubernetesRules(t *testing.T) {
	long := strings.Repeat("v", 10_000)
	tests := []struct {
		name, manifest, field string // field "" when accepted
	}{
		{"a prefixed label", withMeta("{example.com/team: web}", ""), ""},
		{"a 63-character value", withMeta(fmt.Sprintf("{team: %s}", strings.Repeat("v", 63)), ""), ""},
		{"an empty value", withMeta(`{team: ""}`, ""), ""},
		{"a label key ../x", withMeta("{../x: web}", ""), "metadata.labels[../x]"},
		{"an empty label key", withMeta(`{"": web}`, ""), "metadata.labels[]"},
		{"a 64-character value", withMeta(fmt.Sprintf("{team: %s}", strings.Repeat("v", 64)), ""), "metadata.labels[team]"},
		{"a 10,000-character value", withMeta(fmt.Sprintf("{team: %s}", long), ""), "metadata.labels[team]"},
		{"a value with a space", withMeta(`{team: "web app"}`, ""), "metadata.labels[team]"},
		{"a label key too long", withMeta(fmt.Sprintf("{%s: x}", strings.Repeat("k", 64)), ""), "metadata.labels[" + strings.Repeat("k", 64) + "]"},
		{"an annotation with a long value", withMeta("{team: web}", fmt.Sprintf("{note: %s}", long)), ""},
		{"an annotation key with a space", withMeta("{team: web}", `{"a b": x}`), "metadata.annotations[a b]"},
		{"annotations over 256 KiB", withMeta("{team: web}", fmt.Sprintf("{note: %s}", strings.Repeat("v", api.MaxAnnotationsBytes))), "metadata.annotations"},
		{"a name too long", strings.Replace(goodApp, "name: guestbook", "name: "+strings.Repeat("a", 254), 1), "metadata.name"},
		{"a namespace too long", strings.Replace(goodApp, "  name: guestbook\n", "  name: guestbook\n  namespace: "+strings.Repeat("a", 64)+"\n", 1), "metadata.namespace"},
		{"a project no apiserver names so", strings.Replace(goodApp, "project: web", "project: Web_Team", 1), "spec.project"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Application([]byte(tc.manifest), "argocd")
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok {
				t.Fatalf("error %v, want an *Error", err)
			}
			if strings.Contains(err.Error(), strings.Repeat("v", 100)) {
				t.Errorf("the error says the long value back: %.300s", err)
			}
			for _, f := range ve.Fields {
				if f.Field == tc.field {
					return
				}
			}
			t.Errorf("fields %.500v, want %q named", ve.Fields, tc.field)
		})
	}
}

// TestAnnotationLimitIsKubernetes holds the hub's annotation limit to the
// apiserver's, which checkAnnotations calls.
func TestAnnotationLimitIsKubernetes(t *testing.T) {
	if api.MaxAnnotationsBytes != apivalidation.TotalAnnotationSizeLimitB {
		t.Errorf("api.MaxAnnotationsBytes %d, Kubernetes' %d", api.MaxAnnotationsBytes, apivalidation.TotalAnnotationSizeLimitB)
	}
}

// TestCredentialsInURLs checks that a repository URL with credentials is
// refused, naming the field and never saying the password back.
func TestCredentialsInURLs(t *testing.T) {
	const secret = "s3cr3t-PASSWORD"
	app := func(src string) string {
		return `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{"project":"default",` +
			src + `,"destination":{"name":"in-cluster","namespace":"a"}}}`
	}
	project := func(repos string) string {
		return `{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p"},"spec":{"sourceRepos":` + repos + `}}`
	}
	tests := []struct {
		name, manifest, field string // field "" when accepted
		project               bool
	}{
		{"https", app(`"source":{"repoURL":"https://git.example/x.git"}`), "", false},
		{"ssh with its user", app(`"source":{"repoURL":"ssh://git@git.example/x.git"}`), "", false},
		{"scp-like", app(`"source":{"repoURL":"git@git.example:org/x.git"}`), "", false},
		{"an @ in the path", app(`"source":{"repoURL":"https://git.example/@org/x.git"}`), "", false},
		{"user and password", app(`"source":{"repoURL":"https://bot:` + secret + `@git.example/x.git"}`), "spec.source.repoURL", false},
		{"a token as the user", app(`"source":{"repoURL":"https://` + secret + `@git.example/x.git"}`), "spec.source.repoURL", false},
		{"ssh with a password", app(`"source":{"repoURL":"ssh://git:` + secret + `@git.example/x.git"}`), "spec.source.repoURL", false},
		{"an escaped password", app(`"source":{"repoURL":"https://bot:` + secret + `%40x@git.example/x.git"}`), "spec.source.repoURL", false},
		{"in sources", app(`"sources":[{"repoURL":"https://git.example/a.git"},{"repoURL":"https://bot:` + secret + `@charts.example","chart":"c"}]`), "spec.sources[1].repoURL", false},
		{"a token in the query", app(`"source":{"repoURL":"https://git.example/x.git?private_token=` + secret + `"}`), "spec.source.repoURL", false},
		{"a harmless query", app(`"source":{"repoURL":"https://git.example/x.git?ref=main"}`), "", false},
		{"a Helm values file with a password", app(`"source":{"repoURL":"https://git.example/x.git","helm":{"valueFiles":["https://u:` + secret + `@v.example/values.yaml"]}}`),
			"spec.source.helm.valueFiles[0]", false},
		{"a Helm values file signed", app(`"source":{"repoURL":"https://git.example/x.git","helm":{"valueFiles":["https://v.example/values.yaml?X-Amz-Signature=` + secret + `"]}}`),
			"spec.source.helm.valueFiles[0]", false},
		{"a relative Helm values file", app(`"source":{"repoURL":"https://git.example/x.git","helm":{"valueFiles":["values-prod.yaml"]}}`), "", false},
		{"a destination server with a password", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{"project":"default",` +
			`"source":{"repoURL":"https://git.example/x.git"},"destination":{"server":"https://admin:` + secret + `@k8s.example:6443","namespace":"a"}}}`,
			"spec.destination.server", false},
		{"a project's destination with a password", `{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p"},"spec":{` +
			`"destinations":[{"server":"https://admin:` + secret + `@k8s.example:6443","namespace":"*"}]}}`, "spec.destinations[0].server", true},
		{"a project's pattern", project(`["https://git.example/*"]`), "", true},
		{"a project's repository", project(`["https://git.example/*","https://bot:` + secret + `@git.example/x.git"]`), "spec.sourceRepos[1]", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.project {
				_, err = AppProject([]byte(tc.manifest), "argocd")
			} else {
				_, err = Application([]byte(tc.manifest), "argocd")
			}
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Fatalf("error %v, want %s named", err, tc.field)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error says the password back: %v", err)
			}
			if !strings.Contains(err.Error(), "argosy repo add") && !strings.Contains(err.Error(), "cluster Secret") {
				t.Errorf("the error %v does not say how credentials travel", err)
			}
		})
	}
}
