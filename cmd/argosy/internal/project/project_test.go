package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

var ignore = cmp.Options{cmpopts.IgnoreUnexported(apicmd.Options{}, apicmd.WriteFlags{}, apicmd.ApplyOptions{}),
	cmpopts.IgnoreFields(ProjectApplyOptions{}, "IO"), cmpopts.IgnoreFields(apicmd.ListOptions{}, "IO"), cmpopts.IgnoreFields(ProjectDeleteOptions{}, "IO")}

func TestProjectFlags(t *testing.T) {
	apply, err := cmdtest.Parse(t, NewCmdProjectApply, []string{"-f", "p.yaml", "--cluster", "a,b", "-n", "argocd"})
	want := apicmd.ApplyOptions{Write: apicmd.WriteFlags{Output: "table"}, Files: []string{"p.yaml"}, Clusters: []string{"a", "b"}, Namespace: "argocd", NamespaceSet: true}
	if err != nil || !cmp.Equal(want, apply.ApplyOptions, ignore) {
		t.Errorf("apply: %v (-want +got):\n%s", err, cmp.Diff(want, apply.ApplyOptions, ignore))
	}
	list, err := cmdtest.Parse(t, NewCmdProjectList, []string{"--cluster", "a", "--deleted", "-o", "json"})
	if want := (apicmd.ListOptions{Output: "json", Cluster: "a", Deleted: true}); err != nil || !cmp.Equal(want, *list, ignore) {
		t.Errorf("list: %v (-want +got):\n%s", err, cmp.Diff(want, *list, ignore))
	}
	del, err := cmdtest.Parse(t, NewCmdProjectDelete, []string{"web", "--cluster", "a", "--if-generation", "2", "--idempotency-key", "k"})
	gen := int64(2)
	if want := (ProjectDeleteOptions{Write: apicmd.WriteFlags{Output: "table", IdempotencyKey: "k"}, Name: "web", Cluster: "a", Namespace: "argocd", IfGeneration: &gen}); err != nil || !cmp.Equal(want, *del, ignore) {
		t.Errorf("delete: %v (-want +got):\n%s", err, cmp.Diff(want, *del, ignore))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"delete", "web"}, "--cluster is required"},
		{[]string{"delete", "--cluster", "a"}, "accepts 1 arg(s), received 0"},
		{[]string{"apply", "-f", "p.yaml"}, "--cluster is required"},
		{[]string{"list", "x"}, `unknown command "x"`},
	} {
		_, _, err := cmdtest.Run(t, NewCmdProject, append([]string{"project"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, new(*cmdkit.FlagError)) {
			t.Errorf("%s: %v, want the usage error %q", tc.args, err, tc.want)
		}
	}
}

// TestProjectCommands applies, lists and deletes an AppProject against a
// hub.
func TestProjectCommands(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	h.Register(nil, "prod")
	run := func(stdin string, args ...string) (string, string, error) {
		return cmdtest.RunWithInput(t, NewCmdProject, stdin, append(append([]string{"project"}, args...), "--server", h.URL, "--token", h.Admin)...)
	}
	manifest := `{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"web"},"spec":{"sourceRepos":["*"]}}`
	stdout, _, err := run(manifest, "apply", "-f", "-", "--cluster", "prod")
	web := h.Object(api.KindAppProjects, "prod", "argocd", "web")
	if want := "TYPE                 CLUSTER  KIND         NAMESPACE  NAME  GENERATION  OFFSET\n" +
		fmt.Sprintf("appproject.upserted  prod     appprojects  argocd     web   1           %d@%d\n", web.Partition, web.Offset); err != nil || stdout != want {
		t.Fatalf("apply: %v\n%s\nwant\n%s", err, stdout, want)
	}
	reqs := h.Requests()
	var req api.ApplyRequest
	if err := json.Unmarshal([]byte(reqs[0].Body), &req); err != nil || reqs[0].Path != "/api/v1/appprojects" ||
		string(req.Manifest) != `{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"web","namespace":"argocd"},"spec":{"sourceRepos":["*"]}}` {
		t.Errorf("apply sent %s %s (%v)", reqs[0].Path, reqs[0].Body, err)
	}
	if _, _, err := run(manifest, "apply", "-f", "-", "--cluster", "prod", "--if-generation", "0"); err == nil ||
		!strings.Contains(err.Error(), `the hub refused the request (409 Conflict): AppProject argocd/web on cluster "prod" already exists (generation 1)`) {
		t.Errorf("apply again at generation 0: %v", err)
	}
	stdout, _, err = run("", "list", "--cluster", "prod")
	if want := "CLUSTER  NAMESPACE  NAME  GENERATION\nprod     argocd     web   1\n"; err != nil || stdout != want {
		t.Errorf("list: %v\n%s\nwant\n%s", err, stdout, want)
	}
	if _, _, err := run("", "delete", "web", "--cluster", "prod", "--if-generation", "1"); err != nil {
		t.Fatal(err)
	}
	if r := h.Requests()[len(h.Requests())-1]; r.Method != "DELETE" || r.Path != "/api/v1/clusters/prod/appprojects/argocd/web" ||
		r.Query != "" || r.Header.Get(api.HeaderIfMatch) != `"1"` {
		t.Errorf("delete sent %s %s?%s If-Match %s", r.Method, r.Path, r.Query, r.Header.Get(api.HeaderIfMatch))
	}
	if _, stderr, err := run("", "list"); err != nil || stderr != "No AppProjects.\n" {
		t.Errorf("list after delete: %v, %q", err, stderr)
	}
}

func TestProjectHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, NewCmdProject, []string{"project", "apply"}, []string{"project", "list"}, []string{"project", "delete"})
}
