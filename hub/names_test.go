package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckPathNames(t *testing.T) {
	tests := []struct {
		pattern string
		values  map[string]string
		field   string // "" when taken
	}{
		{"/api/v1/clusters/{name}", map[string]string{"name": "prod-eu"}, ""},
		{"/api/v1/clusters/{name}", map[string]string{"name": "prod.eu"}, "name"},
		{"/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", map[string]string{"cluster": "c", "namespace": "argocd", "name": "repo.example-1"}, ""},
		{"/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", map[string]string{"cluster": "c", "namespace": "argocd", "name": ".."}, "name"},
		{"/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", map[string]string{"cluster": "c", "namespace": "argocd", "name": "répo"}, "name"},
		{"/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", map[string]string{"cluster": "c", "namespace": "argocd", "name": strings.Repeat("a", 500)}, "name"},
		{"/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", map[string]string{"cluster": "c", "namespace": "Argo", "name": "r"}, "namespace"},
		{"/api/v1/clusters/{cluster}/applications/{namespace}/{name}", map[string]string{"cluster": "C_1", "namespace": "argocd", "name": "a"}, "cluster"},
		{"/api/v1/clusters/{cluster}/applications/{namespace}/{name}", map[string]string{"cluster": "c", "namespace": "a.b", "name": "a"}, "namespace"},
		{"/api/v1/placements/{namespace}/{name}", map[string]string{"namespace": "argocd", "name": "a\tb"}, "name"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodDelete, "/", nil)
		for k, v := range tc.values {
			r.SetPathValue(k, v)
		}
		err := checkPathNames(r, tc.pattern)
		var ae *apiError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s %v: %v", tc.pattern, tc.values, err)
		case tc.field != "" && (!errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Fields[0].Field != tc.field):
			t.Errorf("%s %.60v: %v, want 400 naming %s", tc.pattern, tc.values, err, tc.field)
		}
	}
}

func TestCheckLabels(t *testing.T) {
	tests := []struct {
		labels map[string]string
		field  string
	}{
		{map[string]string{"env": "prod", "example.com/tier": "web", "empty": ""}, ""},
		{map[string]string{"../x": "1"}, "labels[../x]"},
		{map[string]string{"": "1"}, "labels[]"},
		{map[string]string{"team": strings.Repeat("v", 10000)}, "labels[team]"},
		{map[string]string{"team": "a b"}, "labels[team]"},
		{map[string]string{strings.Repeat("k", 300): "v"}, "labels[" + strings.Repeat("k", 80) + "…]"},
	}
	for _, tc := range tests {
		err := checkLabels("labels", tc.labels)
		var ae *apiError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%v: %v", tc.labels, err)
		case tc.field != "" && (!errors.As(err, &ae) || ae.body.Fields[0].Field != tc.field):
			t.Errorf("%.60v: %v, want 400 naming %s", tc.labels, err, tc.field)
		case tc.field != "" && len(ae.body.Error) > 1000:
			t.Errorf("%.60v: the error is %d bytes long", tc.labels, len(ae.body.Error))
		}
	}
}

func TestCheckRepoURL(t *testing.T) {
	tests := []struct {
		url     string
		refused bool
	}{
		{"https://git.example.com/apps.git", false},
		{"git@github.com:org/apps.git", false},
		{"ssh://git@git.example.com/apps.git", false},
		{"https://charts.example.com/@scope/chart", false},
		{"https://bot:PASSWORD@git.example.com/x.git", true},
		{"https://TOKEN@git.example.com/x.git", true},
		{"http://bot:PASSWORD@git.example.com/x.git", true},
		{"ssh://git:PASSWORD@git.example.com/x.git", true},
		{"bot:PASSWORD@git.example.com:org/x.git", true},
		{"https://bot:PASS WORD@git.example.com/x.git", true},
		{"https://git.example.com/x.git?private_token=PASSWORD", true},
		{"https://git.example.com/x.git?access_token=PASSWORD#main", true},
		{"https://git.example.com/x.git?ref=main", false},
	}
	for _, tc := range tests {
		err := checkRepoURL(tc.url)
		if (err != nil) != tc.refused {
			t.Errorf("%s: %v, want refused %v", tc.url, err, tc.refused)
		}
		var ae *apiError
		if errors.As(err, &ae) {
			if b, _ := json.Marshal(ae.body); strings.Contains(string(b), "PASS") || strings.Contains(string(b), "TOKEN") || ae.body.Fields[0].Field != "url" {
				t.Errorf("%s: %s, want url named and nothing of the URL echoed", tc.url, b)
			}
		}
	}
}

// TestAnswersQuoteLittle checks that a value a refusal quotes back is
// shortened: a cluster name of a mebibyte in a request's clusters is not
// answered with a mebibyte.
func TestAnswersQuoteLittle(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for name, err := range map[string]error{
		"a cluster's name": checkTargets([]string{long}, nil),
		"a cluster twice":  checkTargets([]string{long[:63], long[:63]}, nil),
	} {
		var ae *apiError
		if !errors.As(err, &ae) || len(ae.body.Error) > 1<<10 {
			t.Errorf("%s: %d bytes of error, want a 400 under 1 KiB", name, len(fmt.Sprint(err)))
		}
	}
}
