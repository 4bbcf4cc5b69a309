//go:build integration

package cli_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// TestRedriveEndToEnd wipes a cluster's Argo CD and brings it back with
// `argosy replay redrive`, through the real hub, broker, spoke and Argo CD.
// The hub places an AppProject and two Applications, then changes one,
// deletes one and adds a third. With the spoke stopped, the cluster's
// Argo CD loses every object of the hub's, as after a restore from an
// empty backup; the spoke starts again with its state, which says it has
// applied everything, so nothing tells it to apply them again. Redrive of the
// current state brings back exactly the hub's objects, each at the new
// generation the hub gave it; redrive as of a time before the changes
// takes the cluster back to the state then: the changed Application as it
// was, the deleted one back, the added one deleted. A dry run writes
// nothing, and an unknown cluster is an error that changes nothing.
func TestRedriveEndToEnd(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	hubc, _, url := f.startWith("hub", []string{"--store", "sqlite://" + filepath.Join(f.dir, "views.db"), "--fold",
		"--projector-group", f.prefix + "projector"})
	ns := e.Namespace(t)
	cluster := "redrive-" + ns
	reg, err := hubc.RegisterCluster(t.Context(), cluster, api.ClusterRequest{Labels: map[string]string{"env": "dr"}}, api.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spokeBin := buildSpoke(t)
	spoke := spawnSpoke(t, e, f, spokeBin, url, cluster, reg.JoinToken, ns)
	argosyBin := filepath.Join(t.TempDir(), "argosy")
	if out, err := exec.Command("go", "build", "-o", argosyBin, "github.com/argosyproj/argosy/cmd/argosy").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	redrive := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), argosyBin, append([]string{"replay", "redrive", "--server", url, "--token", f.token,
			"--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", f.prefix, "--hub-key", filepath.Join(f.dir, cli.PublicKeyFile),
			"--clock-margin", "500ms"}, args...)...)
		cmd.Env = append(os.Environ(), "ARGOSY_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out) + stderr.String(), err
		}
		return string(out), nil
	}

	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	projects := dyn.Resource(kubetest.AppProjectGVR).Namespace(kubetest.ArgoNamespace)
	project, a, b, c := "team-"+ns, "a-"+ns, "b-"+ns, "c-"+ns
	repo := kubetest.NewRepo(t)
	apply := func(kind, name, body string) {
		t.Helper()
		m := fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":%q,"metadata":{"name":%q,"namespace":%q},"spec":%s}`,
			kind, name, kubetest.ArgoNamespace, body)
		k := map[string]string{"AppProject": api.KindAppProjects, "Application": api.KindApplications}[kind]
		if _, err := hubc.Apply(t.Context(), k, api.ApplyRequest{Clusters: []string{cluster}, Manifest: json.RawMessage(m)}, api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	app := func(name, proj, path string) {
		t.Helper()
		apply("Application", name, fmt.Sprintf(`{"project":%q,"source":{"repoURL":%q,"path":%q,"targetRevision":"main"},
			"destination":{"server":"https://kubernetes.default.svc","namespace":%q}}`, proj, repo.URL, path, ns))
	}
	// want is the cluster's exact desired state: each Application of the
	// test's, by name, with its source path; and whether the AppProject is
	// there. The hub's generation of each must be on it.
	converged := func(what string, want map[string]string, wantProject bool) {
		t.Helper()
		hubGen := func(kind, name string) string {
			objs, err := hubc.Objects(t.Context(), cluster, kind)
			if err != nil {
				return "?"
			}
			for _, o := range objs {
				if o.Name == name && !o.Deleted {
					return fmt.Sprint(o.Generation)
				}
			}
			return "none"
		}
		var got map[string]string
		waitFor(t, 3*time.Minute, what, func() bool {
			got = map[string]string{}
			for _, name := range []string{a, b, c} {
				o, err := apps.Get(t.Context(), name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil || o.GetDeletionTimestamp() != nil || o.GetAnnotations()[argocd.AnnotationGeneration] != hubGen(api.KindApplications, name) {
					return false
				}
				got[name] = unstructuredString(o.Object, "spec", "source", "path")
			}
			p, err := projects.Get(t.Context(), project, metav1.GetOptions{})
			hasProject := err == nil && p.GetDeletionTimestamp() == nil && p.GetAnnotations()[argocd.AnnotationGeneration] == hubGen(api.KindAppProjects, project)
			return maps.Equal(got, want) && hasProject == wantProject
		})
	}

	apply("AppProject", project, `{"sourceRepos":["*"],"destinations":[{"server":"https://kubernetes.default.svc","namespace":"*"}]}`)
	app(a, project, "a/one")
	app(b, "default", "b")
	converged("the first state applied", map[string]string{a: "a/one", b: "b"}, true)
	time.Sleep(50 * time.Millisecond)
	before := time.Now()
	time.Sleep(50 * time.Millisecond)
	app(a, project, "a/two")
	if _, err := hubc.Delete(t.Context(), api.KindApplications, cluster, kubetest.ArgoNamespace, b, true, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	app(c, "default", "c")
	converged("the second state applied", map[string]string{a: "a/two", c: "c"}, true)

	// The cluster's Argo CD loses the hub's objects while its spoke is
	// down; the spoke's state still says they are applied.
	if err := spoke.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, spoke.LogTail())
	}
	wipe := func(r dynamic.ResourceInterface, name string) {
		t.Helper()
		if _, err := r.Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if err := r.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		kubetest.WaitGone(t, func() error { _, err := r.Get(t.Context(), name, metav1.GetOptions{}); return err })
	}
	wipe(apps, a)
	wipe(apps, c)
	wipe(projects, project)
	spoke = spawnSpoke(t, e, f, spokeBin, url, cluster, reg.JoinToken, ns)
	t.Cleanup(func() {
		if err := spoke.Terminate(30 * time.Second); err != nil {
			t.Errorf("%v; log:\n%s", err, spoke.LogTail())
		}
	})

	if out, err := redrive("--cluster", "nope"); err == nil || !strings.Contains(out, `cluster "nope" is not registered`) {
		t.Errorf("redrive of an unknown cluster: %v, want refused\n%s", err, out)
	}
	out, err := redrive("--cluster", cluster, "-o", "json")
	if err != nil {
		t.Fatalf("argosy replay redrive: %v\n%s", err, out)
	}
	if steps := planSteps(t, out, true); !equalStrings(steps, []string{"apply " + project, "apply " + a, "apply " + c}) {
		t.Errorf("redrive of the current state: steps %v", steps)
	}
	converged("the current state redriven", map[string]string{a: "a/two", c: "c"}, true)

	at := before.UTC().Format(time.RFC3339Nano)
	objectsBefore, err := hubc.Objects(t.Context(), cluster, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err = redrive("--cluster", cluster, "--as-of", at, "--dry-run", "-o", "json")
	if err != nil {
		t.Fatalf("redrive --dry-run: %v\n%s", err, out)
	}
	if steps := planSteps(t, out, false); !equalStrings(steps, []string{"delete " + c, "apply " + project, "apply " + a, "apply " + b}) {
		t.Errorf("redrive --as-of --dry-run: steps %v", steps)
	}
	if after, err := hubc.Objects(t.Context(), cluster, ""); err != nil || !equalObjects(after, objectsBefore) {
		t.Errorf("a dry run changed the hub's objects: %v", err)
	}
	if out, err := redrive("--cluster", cluster, "--as-of", at); err != nil {
		t.Fatalf("argosy replay redrive --as-of: %v\n%s", err, out)
	}
	converged("the state as of the time redriven", map[string]string{a: "a/one", b: "b"}, true)
}

// planSteps reads redrive's JSON plan as "action name" lines; written
// says whether each step must have written one event, or none.
func planSteps(t *testing.T, out string, written bool) []string {
	t.Helper()
	var plan struct {
		Steps []struct {
			Action, Name string
			Written      []api.Written
		}
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var steps []string
	for _, s := range plan.Steps {
		steps = append(steps, s.Action+" "+s.Name)
		if (len(s.Written) == 1) != written {
			t.Errorf("step %s %s wrote %+v", s.Action, s.Name, s.Written)
		}
	}
	return steps
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// equalObjects compares two listings of the hub's objects by name and
// generation.
func equalObjects(a, b []api.Object) bool {
	gens := func(objs []api.Object) map[string]int64 {
		m := map[string]int64{}
		for _, o := range objs {
			m[o.Kind+"/"+o.Name] = o.Generation
		}
		return m
	}
	return maps.Equal(gens(a), gens(b))
}
